//! In-process aggregation benchmark over Pokec-shaped profiles (target: the seed's
//! `AGE` aggregation over 1,632,803 profiles under 300 ms).
//!
//! `cargo run --release -p quiver-aql --example agg_bench -- DIR [PROFILES] [RUNS] [QUERIES]`
//!
//! DIR keeps the data between runs (loaded once when the collection is missing), so two
//! builds can be compared on the same files. Profiles have the seed's ~60 attributes in its
//! column order (`AGE` the 8th); values are deterministic pseudo-random short strings and
//! numbers, about 600 bytes of JSON per profile like the real data. Until the `pokec`
//! generator in bench/ is used here, this is the stand-in.

use std::sync::Arc;
use std::time::Instant;

use quiver_aql::{CursorRequest, QueryService};
use quiver_core::{CollectionSpec, Core, CoreOptions, InsertOptions};
use serde_json::{json, Map, Value};

const ATTRS: [&str; 59] = [
    "public",
    "completion_percentage",
    "gender",
    "region",
    "last_login",
    "registration",
    "AGE",
    "body",
    "I_am_working_in_field",
    "spoken_languages",
    "hobbies",
    "I_most_enjoy_good_food",
    "pets",
    "body_type",
    "my_eyesight",
    "eye_color",
    "hair_color",
    "hair_type",
    "completed_level_of_education",
    "favourite_color",
    "relation_to_smoking",
    "relation_to_alcohol",
    "sign_in_zodiac",
    "on_pokec_i_am_looking_for",
    "love_is_for_me",
    "relation_to_casual_sex",
    "my_partner_should_be",
    "marital_status",
    "children",
    "relation_to_children",
    "I_like_movies",
    "I_like_watching_movie",
    "I_like_music",
    "I_mostly_like_listening_to_music",
    "the_idea_of_good_evening",
    "I_like_specialties_from_kitchen",
    "fun",
    "I_am_going_to_concerts",
    "my_active_sports",
    "my_passive_sports",
    "profession",
    "I_like_books",
    "life_style",
    "music",
    "cars",
    "politics",
    "relationships",
    "art_culture",
    "hobbies_interests",
    "science_technologies",
    "computers_internet",
    "education",
    "sport",
    "movies",
    "travelling",
    "health",
    "companies_brands",
    "more",
    "I_like",
];

const WORDS: [&str; 12] = [
    "null",
    "hudba",
    "sport",
    "kino",
    "priatelia",
    "cestovanie",
    "bratislava",
    "ziadne",
    "modra",
    "pes, macka",
    "slovensky, anglicky",
    "citanie kniziek",
];

/// splitmix64: deterministic and dependency-free.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn profile(i: u64) -> Value {
    let mut s = i;
    let mut m = Map::new();
    m.insert("_key".into(), json!(format!("P{}", i + 1)));
    for (n, a) in ATTRS.iter().enumerate() {
        let r = next(&mut s);
        let v = match *a {
            "public" | "gender" => json!(r % 2),
            "completion_percentage" => json!(r % 101),
            // 0 stands for "unknown" as in the real data; the rest 10..80.
            "AGE" => json!(if r % 10 == 0 { 0 } else { 10 + r % 71 }),
            "last_login" | "registration" => json!(format!(
                "20{:02}-{:02}-{:02} {:02}:{:02}:00.0",
                r % 13,
                1 + r % 12,
                1 + r % 28,
                r % 24,
                r % 60
            )),
            _ if n % 3 == 0 => json!(""),
            _ => json!(WORDS[(r % WORDS.len() as u64) as usize]),
        };
        m.insert((*a).to_string(), v);
    }
    Value::Object(m)
}

fn run(service: &QueryService, query: &str, options: Value) -> usize {
    let mut request = CursorRequest::new(query);
    request.rules = options["optimizer"]["rules"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let first = service
        .create_cursor("_system", request)
        .expect("query runs");
    let n = first.rows.len();
    std::hint::black_box(
        serde_json::to_vec(&first.rows)
            .map(|v| v.len())
            .unwrap_or(0),
    );
    n
}

/// CPU time of the calling thread in ms (the query runs on it): on the shared, overloaded
/// machine wall time mostly measures waiting for a core, CPU time what the query costs.
fn thread_cpu_ms() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns / 1e6)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.get(1).expect("usage: agg_bench DIR [PROFILES] [RUNS]");
    let profiles: u64 = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_632_803);
    let runs: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(5);
    // Optional: only the queries (with options) numbered in this list, e.g. "0,2".
    let only: Option<Vec<usize>> = args
        .get(4)
        .map(|a| a.split(',').filter_map(|n| n.parse().ok()).collect());
    std::fs::create_dir_all(dir).expect("data directory");
    let t = Instant::now();
    let core =
        Arc::new(Core::open(std::path::Path::new(dir), CoreOptions::default()).expect("core"));
    println!("opened in {:.1} s", t.elapsed().as_secs_f64());
    let db = core.database("_system").expect("system database");
    if db.collection("profiles").is_err() {
        let t = Instant::now();
        let coll = db
            .create_collection(CollectionSpec::new("profiles"))
            .expect("collection");
        let mut batch = Vec::with_capacity(1000);
        for i in 0..profiles {
            batch.push(profile(i));
            if batch.len() == 1000 || i + 1 == profiles {
                let r = coll
                    .insert_many(std::mem::take(&mut batch), &InsertOptions::new())
                    .expect("insert");
                r.wait().expect("commit");
            }
        }
        println!(
            "loaded {profiles} profiles in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    let service = QueryService::over_core(core.clone());
    let queries = [
        (
            "FOR x IN profiles COLLECT age = x.AGE WITH COUNT INTO counter RETURN {age: age, amount: counter}",
            json!({}),
        ),
        (
            "FOR x IN profiles COLLECT age = x.AGE WITH COUNT INTO counter RETURN {age: age, amount: counter}",
            json!({"optimizer": {"rules": ["-reduce-extraction-to-projection"]}}),
        ),
        ("FOR x IN profiles FILTER x.AGE == 30 COLLECT WITH COUNT INTO n RETURN n", json!({})),
    ];
    println!("| query | options | groups/rows | median wall ms | median CPU ms | min CPU ms |");
    println!("|---|---|---|---|---|---|");
    for (n, (q, options)) in queries.into_iter().enumerate() {
        if only.as_ref().is_some_and(|o| !o.contains(&n)) {
            continue;
        }
        let mut wall = Vec::with_capacity(runs);
        let mut cpu = Vec::with_capacity(runs);
        let mut rows = 0;
        for _ in 0..runs {
            let t = Instant::now();
            let c = thread_cpu_ms();
            rows = run(&service, q, options.clone());
            cpu.push(thread_cpu_ms() - c);
            wall.push(t.elapsed().as_secs_f64() * 1e3);
        }
        wall.sort_by(f64::total_cmp);
        cpu.sort_by(f64::total_cmp);
        println!(
            "| `{q}` | `{options}` | {rows} | {:.0} | {:.0} | {:.0} |",
            wall[wall.len() / 2],
            cpu[cpu.len() / 2],
            cpu[0]
        );
    }
}
