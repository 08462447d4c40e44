//! Vertex existence marks (docs/design/core.md, "Vertex existence marks"): a traversal that
//! returns only `v._id` takes a reached vertex as existing without a primary-index probe when
//! the edge hit carries the vertex's mark and the mark is the existence epoch of the vertex's
//! collection at the query's snapshot.
//!
//! A model test: random inserts, removes and updates of vertices, truncates, a vertex
//! collection dropped and created again, edges inserted and removed; after every step the
//! 2-hop traversal's answer (ids, nulls and the warnings 1202 of dangling edges) is compared
//! with the model, twice (the second run reads the marks the first one left), in read views
//! taken a few steps earlier (older snapshots, which also leave marks), and in writing
//! transactions that removed or inserted vertices of their own.

mod support;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use quiver_aql::source::core::CoreSource;
use quiver_aql::source::{Transaction, WriteOptions};
use quiver_aql::{DataSource, QueryService};
use quiver_core::{CollectionSpec, Core, CoreOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use support::CursorJson;

const TRAVERSAL: &str = "FOR x IN 1..2 OUTBOUND 'h/hub' e \
                         OPTIONS {bfs: true, uniqueVertices: 'global'} RETURN x._id";
const KEYS: usize = 12;

#[derive(Clone, Default)]
struct Model {
    alive: BTreeSet<String>,
    /// Edge key → (`_from`, `_to`).
    edges: BTreeMap<String, (String, String)>,
}

impl Model {
    /// The vertices the traversal reaches: ids of those alive (sorted) and of those missing.
    fn expected(&self) -> (Vec<String>, Vec<String>) {
        let mut seen = BTreeSet::from(["h/hub".to_string()]);
        let mut level = vec!["h/hub".to_string()];
        let mut reached = Vec::new();
        for _ in 0..2 {
            let mut next = Vec::new();
            for v in &level {
                for (from, to) in self.edges.values() {
                    if from == v && seen.insert(to.clone()) {
                        next.push(to.clone());
                    }
                }
            }
            reached.extend(next.iter().cloned());
            level = next;
        }
        let (mut alive, mut missing): (Vec<String>, Vec<String>) =
            reached.into_iter().partition(|v| self.alive.contains(v));
        alive.sort();
        missing.sort();
        (alive, missing)
    }
}

/// The traversal's answer in `body`: ids (sorted), and the vertices of the nulls, from the
/// warnings (sorted); checks that every null has its warning.
fn answer(body: &Value) -> (Vec<String>, Vec<String>) {
    let result = body["result"].as_array().expect("a result");
    let mut ids: Vec<String> = result
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    ids.sort();
    let nulls = result.iter().filter(|v| v.is_null()).count();
    let mut missing: Vec<String> = body["extra"]["warnings"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|w| {
            assert_eq!(w["code"], json!(1202), "{w}");
            let text = w["message"].as_str().unwrap();
            let id = text
                .strip_prefix("vertex '")
                .and_then(|t| t.strip_suffix("' not found"))
                .unwrap_or_else(|| panic!("unexpected warning {text}"));
            id.to_string()
        })
        .collect();
    missing.sort();
    assert_eq!(nulls, missing.len(), "{body}");
    (ids, missing)
}

struct World {
    core: Arc<Core>,
    service: QueryService,
    model: Model,
    next_edge: u64,
}

impl World {
    fn new(dir: &std::path::Path) -> World {
        let core = Arc::new(Core::open(dir, CoreOptions::default()).unwrap());
        let db = core.database("_system").unwrap();
        for name in ["h", "v", "w"] {
            db.create_collection(CollectionSpec::new(name)).unwrap();
        }
        db.create_collection(CollectionSpec::from_json(&json!({"name": "e", "type": 3})).unwrap())
            .unwrap();
        let service = QueryService::over_core(core.clone());
        let mut world = World {
            core,
            service,
            model: Model::default(),
            next_edge: 0,
        };
        world.write("INSERT {_key: 'hub'} INTO h", json!({}));
        world.model.alive.insert("h/hub".into());
        world
    }

    fn write(&self, query: &str, binds: Value) {
        let req = support::cursor(&json!({"query": query, "bindVars": binds}));
        self.service
            .create_cursor_json("_system", req)
            .unwrap_or_else(|e| panic!("{query} {binds}: {e}"));
    }

    fn view(&self) -> Box<dyn Transaction> {
        CoreSource::new(self.core.clone())
            .begin("_system", &[])
            .unwrap()
    }

    fn run_in(&self, txn: Option<Box<dyn Transaction>>) -> (Vec<String>, Vec<String>) {
        let req =
            support::cursor(&json!({"query": TRAVERSAL, "options": {"maxWarningCount": 1000}}));
        let body = match txn {
            None => self.service.create_cursor_json("_system", req),
            Some(txn) => self.service.create_cursor_in_json("_system", req, txn),
        }
        .unwrap()
        .1;
        answer(&body)
    }

    fn random_vertex(rng: &mut StdRng) -> String {
        let coll = if rng.gen_bool(0.7) { "v" } else { "w" };
        format!("{coll}/k{}", rng.gen_range(0..KEYS))
    }

    /// One random change, applied to the database and the model; true when a collection
    /// was dropped (older read views would resolve its name to the new one).
    fn step(&mut self, rng: &mut StdRng) -> bool {
        let id = Self::random_vertex(rng);
        let (coll, key) = id.split_once('/').unwrap();
        let alive = self.model.alive.contains(&id);
        match rng.gen_range(0..100) {
            0..=24 if !alive => {
                self.write("INSERT {_key: @k} INTO @@c", json!({"k": key, "@c": coll}));
                self.model.alive.insert(id);
            }
            0..=39 if alive => {
                self.write("REMOVE @k IN @@c", json!({"k": key, "@c": coll}));
                self.model.alive.remove(&id);
            }
            0..=49 if alive => {
                // A new version of an alive vertex: its epoch stays.
                self.write(
                    "UPDATE @k WITH {n: @n} IN @@c",
                    json!({"k": key, "@c": coll, "n": rng.gen_range(0..1000)}),
                );
            }
            50..=52 => {
                let db = self.core.database("_system").unwrap();
                let _ = db.collection(coll).unwrap().truncate(false).unwrap();
                self.model
                    .alive
                    .retain(|v| !v.starts_with(&format!("{coll}/")));
            }
            53 => {
                // Another collection under the same name: marks of the old one mean nothing.
                let db = self.core.database("_system").unwrap();
                db.drop_collection(coll, false).unwrap();
                db.create_collection(CollectionSpec::new(coll)).unwrap();
                self.model
                    .alive
                    .retain(|v| !v.starts_with(&format!("{coll}/")));
                return true;
            }
            54..=84 => {
                let from = if rng.gen_bool(0.4) {
                    "h/hub".to_string()
                } else {
                    Self::random_vertex(rng)
                };
                let to = Self::random_vertex(rng);
                let key = format!("x{}", self.next_edge);
                self.next_edge += 1;
                self.write(
                    "INSERT {_key: @k, _from: @f, _to: @t} INTO e",
                    json!({"k": key, "f": from, "t": to}),
                );
                self.model.edges.insert(key, (from, to));
            }
            85..=99 if !self.model.edges.is_empty() => {
                let n = rng.gen_range(0..self.model.edges.len());
                let key = self.model.edges.keys().nth(n).unwrap().clone();
                self.write("REMOVE @k IN e", json!({"k": key}));
                self.model.edges.remove(&key);
            }
            _ => {}
        }
        false
    }

    /// A writing transaction that removes an alive vertex (or inserts a missing one) of its
    /// own: its traversal must see that change, whatever the marks say. The query commits
    /// the transaction at its end.
    fn check_own_writes(&mut self, rng: &mut StdRng) {
        let id = Self::random_vertex(rng);
        let (coll, key) = id.split_once('/').unwrap();
        let mut txn = CoreSource::new(self.core.clone())
            .begin("_system", &[coll.to_string()])
            .unwrap();
        assert_eq!(
            txn.existence_epoch(coll),
            None,
            "a writing transaction has no epoch"
        );
        let mut model = self.model.clone();
        if model.alive.contains(&id) {
            txn.remove(coll, json!({"_key": key}), &WriteOptions::default())
                .unwrap();
            model.alive.remove(&id);
        } else {
            txn.insert(coll, json!({"_key": key}), &WriteOptions::default())
                .unwrap();
            model.alive.insert(id);
        }
        assert_eq!(self.run_in(Some(txn)), model.expected(), "own writes");
        self.model = model;
    }
}

fn run_model(seed: u64, steps: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut world = World::new(dir.path());
    let mut rng = StdRng::seed_from_u64(seed);
    // Read views taken some steps ago, with the model of their snapshot.
    let mut held: VecDeque<(Box<dyn Transaction>, Model)> = VecDeque::new();
    for step in 0..steps {
        if world.step(&mut rng) {
            held.clear();
        }
        let want = world.model.expected();
        assert_eq!(
            world.run_in(None),
            want,
            "seed {seed} step {step}: first run"
        );
        assert_eq!(
            world.run_in(None),
            want,
            "seed {seed} step {step}: marked run"
        );
        held.push_back((world.view(), world.model.clone()));
        if held.len() > rng.gen_range(1..5) {
            let (view, model) = held.pop_front().unwrap();
            assert_eq!(
                world.run_in(Some(view)),
                model.expected(),
                "seed {seed} step {step}: an older snapshot"
            );
        }
        if step % 7 == 0 {
            world.check_own_writes(&mut rng);
            assert_eq!(
                world.run_in(None),
                world.model.expected(),
                "seed {seed} step {step}: after own writes committed"
            );
        }
    }
}

#[test]
fn traversal_ids_match_the_model_under_random_changes() {
    for seed in 0..6 {
        run_model(seed, 150);
    }
}

/// The marks are used at all: after one run, a vertex reached again is taken as existing
/// without a probe (the query's document lookups drop), and a removal makes the next run
/// probe it again (and answer null with the warning).
#[test]
fn marks_spare_probes_until_the_collection_changes() {
    let dir = tempfile::tempdir().unwrap();
    let world = World::new(dir.path());
    for i in 0..5 {
        world.write("INSERT {_key: @k} INTO v", json!({"k": format!("k{i}")}));
        world.write(
            "INSERT {_from: 'h/hub', _to: @t} INTO e",
            json!({"t": format!("v/k{i}")}),
        );
    }
    let lookups = || {
        let req =
            support::cursor(&json!({"query": TRAVERSAL, "options": {"maxWarningCount": 1000}}));
        let body = world.service.create_cursor_json("_system", req).unwrap().1;
        (
            body["extra"]["stats"]["documentLookups"].as_u64().unwrap(),
            answer(&body),
        )
    };
    let ids: Vec<String> = (0..5).map(|i| format!("v/k{i}")).collect();
    assert_eq!(lookups(), (5, (ids.clone(), vec![])));
    assert_eq!(lookups(), (0, (ids.clone(), vec![])));
    world.write("REMOVE 'k3' IN v", json!({}));
    let mut left = ids.clone();
    left.remove(3);
    assert_eq!(lookups(), (5, (left.clone(), vec!["v/k3".to_string()])));
    // The dangling edge is probed every time; the others are known again.
    assert_eq!(lookups(), (1, (left, vec!["v/k3".to_string()])));
}
