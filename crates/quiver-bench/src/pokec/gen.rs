//! Deterministic generator of a Pokec-shaped social network (SNAP soc-pokec: 1,632,803
//! profiles, 30,622,564 directed relations at scale 1.0).
//!
//! The real data cannot be shipped or downloaded here, so the benchmark runs on a synthetic
//! network with the same shape: the 59 profile columns of the SNAP file in their order with
//! the same value types (numbers for `public`, `completion_percentage`, `gender` and `AGE`, as
//! the ArangoDB import produced them, strings elsewhere, `null` for missing values), and a
//! directed friendship graph with a heavy-tailed degree distribution and reciprocity.
//!
//! Graph model (Chung-Lu, directed): every vertex gets a weight `(rank + RANK_OFFSET)^-ALPHA`
//! (ranks are a random permutation, so hubs are spread over the key space), a tenth of the
//! vertices are "inactive" with a much smaller weight; an edge's source and target are drawn
//! proportionally to the weights, and with probability `RECIPROCITY` the reverse edge is added
//! as well (about half of Pokec's friendships are mutual). Self-loops and duplicates are
//! dropped and the sample is topped up until the exact relation count is reached.
//!
//! Two properties the benchmark relies on are guaranteed by construction and checked:
//! - the hard-path pair (P349622 -> P1625331 at full scale, the same relative positions at
//!   smaller scales) has no connection: the target gets in-weight 0 and never receives an
//!   edge, so no path can end there, while the source has ordinary out-edges (a one-sided
//!   search has to exhaust everything reachable);
//! - ordinary shortest-path pairs are connected: the generator runs a forward and a backward
//!   breadth-first search from the heaviest hub `h` and draws each pair's source from the
//!   vertices that reach `h` and its target from those reachable from `h`, so `a -> h -> b`
//!   always exists. The exact shortest length of every pair is computed (bidirectional BFS)
//!   and stored, as are the expected neighbor counts, so a run can be checked for correctness.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use quiver_errors::{Error, ErrorCode};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, WeightedAliasIndex};
use serde_json::{json, Map, Value};

pub const FULL_PROFILES: u64 = 1_632_803;
pub const FULL_RELATIONS: u64 = 30_622_564;
/// The benchmark's hard-path pair at full scale (user ids of the SNAP file).
pub const HARD_FROM_FULL: u64 = 349_622;
pub const HARD_TO_FULL: u64 = 1_625_331;
pub const DEFAULT_SEED: u64 = 3;
/// Smallest network generated: below this the id files and the hard pair lose their meaning.
pub const MIN_PROFILES: u32 = 100;
pub const MAX_SCALE: f64 = 4.0;

pub const READ_IDS: usize = 100_000;
pub const WARMUP_IDS: usize = 1_000;
pub const SHORTEST_PAIRS: usize = 1_000;
/// Start vertices of the neighbors / neighbors2 and neighbors2data workloads.
pub const NEIGHBOR_STARTS: usize = 1_000;
pub const NEIGHBOR_DATA_STARTS: usize = 100;

const ALPHA: f64 = 0.62;
const RANK_OFFSET: f64 = 12.0;
const INACTIVE_SHARE: f64 = 0.10;
const INACTIVE_FACTOR: f64 = 0.03;
const RECIPROCITY: f64 = 0.5;
/// Bounds the top-up loop; each round draws as many edges as are still missing, so only
/// networks too dense for their size (rejected up front) could need more.
const MAX_ROUNDS: usize = 64;

/// The SNAP profile columns in file order (column 1 is the key).
pub const ATTRIBUTES: [&str; 59] = [
    "_key",
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
];

/// Size and seed of one generated network.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spec {
    pub scale: f64,
    pub seed: u64,
}

impl Spec {
    pub fn new(scale: f64, seed: u64) -> Result<Spec, Error> {
        if !scale.is_finite() || scale <= 0.0 || scale > MAX_SCALE {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("scale must be in (0, {MAX_SCALE}], got {scale}"),
            ));
        }
        let spec = Spec { scale, seed };
        if spec.profiles() < MIN_PROFILES {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!(
                    "scale {scale} gives {} profiles; at least {MIN_PROFILES} are needed",
                    spec.profiles()
                ),
            ));
        }
        Ok(spec)
    }

    pub fn profiles(&self) -> u32 {
        (FULL_PROFILES as f64 * self.scale).round() as u32
    }

    /// Relations keep Pokec's average out-degree (18.75) at every scale.
    pub fn relations(&self) -> u64 {
        (FULL_RELATIONS as f64 * self.scale).round() as u64
    }

    /// The hard pair as vertex indexes (key = `P<index + 1>`), at the same relative position
    /// in the key space as at full scale, where it is exactly P349622 -> P1625331.
    pub fn hard_pair(&self) -> (u32, u32) {
        let n = u64::from(self.profiles());
        let at = |full_id: u64| -> u32 {
            let id = (full_id * n + FULL_PROFILES / 2) / FULL_PROFILES;
            (id.clamp(1, n) - 1) as u32
        };
        (at(HARD_FROM_FULL), at(HARD_TO_FULL))
    }
}

pub fn key_of(vertex: u32) -> String {
    format!("P{}", u64::from(vertex) + 1)
}

/// Random source for one profile: independent of generation order, so any profile (and the
/// write bodies) can be produced alone.
fn profile_rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

const REGIONS: [&str; 24] = [
    "bratislavsky kraj, bratislava - petrzalka",
    "bratislavsky kraj, bratislava - ruzinov",
    "zilinsky kraj, zilina",
    "kosicky kraj, kosice - juh",
    "presovsky kraj, presov",
    "banskobystricky kraj, banska bystrica",
    "nitriansky kraj, nitra",
    "trnavsky kraj, trnava",
    "trenciansky kraj, trencin",
    "zilinsky kraj, martin",
    "kosicky kraj, michalovce",
    "presovsky kraj, poprad",
    "nitriansky kraj, nove zamky",
    "trnavsky kraj, piestany",
    "banskobystricky kraj, zvolen",
    "trenciansky kraj, povazska bystrica",
    "zilinsky kraj, liptovsky mikulas",
    "presovsky kraj, bardejov",
    "kosicky kraj, spisska nova ves",
    "nitriansky kraj, komarno",
    "trnavsky kraj, dunajska streda",
    "banskobystricky kraj, lucenec",
    "ceska republika, cz - praha",
    "zahranicie, zahranicie - anglicko",
];

const WORDS: [&str; 64] = [
    "hudba",
    "sport",
    "filmy",
    "kniznica",
    "priatelia",
    "cestovanie",
    "pocitace",
    "internet",
    "futbal",
    "hokej",
    "turistika",
    "bicykel",
    "plavanie",
    "tanec",
    "diskoteka",
    "kino",
    "divadlo",
    "priroda",
    "hory",
    "more",
    "auta",
    "motorky",
    "fotografia",
    "varenie",
    "pizza",
    "cokolada",
    "kava",
    "pivo",
    "vino",
    "zabava",
    "party",
    "oddych",
    "spanok",
    "skola",
    "praca",
    "rodina",
    "laska",
    "zvierata",
    "pes",
    "macka",
    "rock",
    "pop",
    "hip hop",
    "techno",
    "metal",
    "jazz",
    "klasika",
    "dobra nalada",
    "humor",
    "romantika",
    "akcne filmy",
    "komedie",
    "horory",
    "sci-fi",
    "fantasy",
    "detektivky",
    "poezia",
    "historia",
    "politika",
    "veda",
    "technika",
    "mobil",
    "nakupovanie",
    "moda",
];

const COLORS: [&str; 8] = [
    "modra", "cervena", "zelena", "cierna", "biela", "zlta", "fialova", "hneda",
];
const ZODIAC: [&str; 12] = [
    "baran",
    "byk",
    "blizenci",
    "rak",
    "lev",
    "panna",
    "vahy",
    "skorpion",
    "strelec",
    "kozorozec",
    "vodnar",
    "ryby",
];
const EDUCATION: [&str; 5] = [
    "zakladne",
    "stredoskolske",
    "vysokoskolske",
    "ucnovske",
    "student",
];
const MARITAL: [&str; 4] = [
    "slobodny(a)",
    "zenaty (vydata)",
    "rozvedeny(a)",
    "mam vazny vztah",
];

/// Probability that a free-text attribute is filled; Pokec's optional fields are mostly empty.
const TEXT_FILL: f64 = 0.35;

fn pick<'a>(rng: &mut ChaCha8Rng, items: &[&'a str]) -> &'a str {
    // Squaring a uniform number favours the first entries (a few regions and words dominate).
    let u: f64 = rng.gen();
    items[((u * u) * items.len() as f64) as usize % items.len()]
}

fn words(rng: &mut ChaCha8Rng) -> String {
    let count = rng.gen_range(1..=4);
    let mut out = String::new();
    for i in 0..count {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(pick(rng, &WORDS));
    }
    out
}

fn timestamp(rng: &mut ChaCha8Rng, first_year: u32, last_year: u32) -> String {
    format!(
        "{}-{:02}-{:02} {:02}:{:02}:00.0",
        rng.gen_range(first_year..=last_year),
        rng.gen_range(1..=12),
        rng.gen_range(1..=28),
        rng.gen_range(0..24),
        rng.gen_range(0..60)
    )
}

/// AGE as Pokec has it: 0 ("not given") for about a third, otherwise mostly teenagers and
/// people in their twenties with a long tail up to 80.
pub fn age(rng: &mut ChaCha8Rng) -> u32 {
    if rng.gen_bool(0.3) {
        return 0;
    }
    let u: f64 = rng.gen();
    let v: f64 = rng.gen();
    (14.0 + u * v * 67.0).floor() as u32
}

/// One profile document with the attributes of [`ATTRIBUTES`] in order; `key` None leaves
/// `_key` out (the write workloads let the server assign keys).
pub fn profile(seed: u64, stream: u64, key: Option<&str>) -> Value {
    let mut rng = profile_rng(seed, stream);
    let rng = &mut rng;
    let mut doc = Map::with_capacity(ATTRIBUTES.len());
    if let Some(key) = key {
        doc.insert("_key".into(), json!(key));
    }
    let gender = if rng.gen_bool(0.02) {
        Value::Null
    } else {
        json!(rng.gen_range(0..2))
    };
    doc.insert("public".into(), json!(u32::from(rng.gen_bool(0.7))));
    doc.insert(
        "completion_percentage".into(),
        json!(rng.gen_range(0..=100)),
    );
    doc.insert("gender".into(), gender);
    doc.insert("region".into(), json!(pick(rng, &REGIONS)));
    doc.insert("last_login".into(), json!(timestamp(rng, 2012, 2012)));
    doc.insert("registration".into(), json!(timestamp(rng, 1999, 2012)));
    doc.insert("AGE".into(), json!(age(rng)));
    for name in &ATTRIBUTES[8..] {
        let value = if rng.gen_bool(TEXT_FILL) {
            json!(match *name {
                "body" => format!(
                    "{} cm, {} kg",
                    rng.gen_range(150..200),
                    rng.gen_range(45..110)
                ),
                "eye_color" | "hair_color" | "favourite_color" => pick(rng, &COLORS).to_string(),
                "sign_in_zodiac" => ZODIAC[rng.gen_range(0..ZODIAC.len())].to_string(),
                "completed_level_of_education" => pick(rng, &EDUCATION).to_string(),
                "marital_status" => pick(rng, &MARITAL).to_string(),
                "children" => ["nemam", "mam", "v buducnosti ano"][rng.gen_range(0..3)].to_string(),
                _ => words(rng),
            })
        } else {
            Value::Null
        };
        doc.insert((*name).into(), value);
    }
    Value::Object(doc)
}

/// Body of the `i`th write of the singleWrite workloads: a profile that is not in the
/// network (stream space above every vertex), without `_key`.
pub fn write_body(spec: &Spec, i: u64) -> Value {
    profile(spec.seed, (1 << 40) + i, None)
}

/// Adjacency in compressed sparse row form.
pub struct Csr {
    pub offsets: Vec<u64>,
    pub targets: Vec<u32>,
}

impl Csr {
    /// `pairs` sorted by (first, second).
    fn from_sorted(n: u32, pairs: impl Iterator<Item = (u32, u32)>, len: usize) -> Csr {
        let mut offsets = vec![0u64; n as usize + 1];
        let mut targets = Vec::with_capacity(len);
        for (a, b) in pairs {
            offsets[a as usize + 1] += 1;
            targets.push(b);
        }
        for i in 0..n as usize {
            offsets[i + 1] += offsets[i];
        }
        Csr { offsets, targets }
    }

    pub fn neighbors(&self, v: u32) -> &[u32] {
        &self.targets[self.offsets[v as usize] as usize..self.offsets[v as usize + 1] as usize]
    }

    pub fn vertices(&self) -> u32 {
        (self.offsets.len() - 1) as u32
    }
}

/// The generated network: edges sorted by (from, to), as `from << 32 | to`.
pub struct Network {
    pub spec: Spec,
    pub edges: Vec<u64>,
    /// The heaviest vertex, through which shortest-path pairs are guaranteed to connect.
    pub hub: u32,
}

fn weights(spec: &Spec, rng: &mut ChaCha8Rng) -> (Vec<f64>, u32) {
    let n = spec.profiles();
    let mut ranks: Vec<u32> = (0..n).collect();
    ranks.shuffle(rng);
    let mut w = vec![0.0f64; n as usize];
    for (rank, &v) in ranks.iter().enumerate() {
        w[v as usize] = (rank as f64 + RANK_OFFSET).powf(-ALPHA);
    }
    let hub = ranks[0];
    for (v, weight) in w.iter_mut().enumerate() {
        if v as u32 != hub && rng.gen_bool(INACTIVE_SHARE) {
            *weight *= INACTIVE_FACTOR;
        }
    }
    (w, hub)
}

fn alias(weights: Vec<f64>) -> Result<WeightedAliasIndex<f64>, Error> {
    WeightedAliasIndex::new(weights)
        .map_err(|e| Error::with_message(ErrorCode::Internal, format!("weights: {e}")))
}

/// Generates the friendship graph of `spec`.
pub fn generate_network(spec: &Spec) -> Result<Network, Error> {
    let n = spec.profiles();
    let m = spec.relations();
    // Rejects networks that cannot reach their relation count without near-complete graphs.
    if m > u64::from(n) * u64::from(n - 1) / 4 {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            format!("{m} relations are too many for {n} profiles"),
        ));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let (out_w, hub) = weights(spec, &mut rng);
    let (hard_from, hard_to) = spec.hard_pair();
    let mut in_w = out_w.clone();
    // Out- and in-weights are correlated but not identical: people who add many friends are
    // added by many, with individual variation.
    for w in in_w.iter_mut() {
        *w *= 0.5 + rng.gen::<f64>();
    }
    in_w[hard_to as usize] = 0.0;
    let out_dist = alias(out_w)?;
    let in_dist = alias(in_w)?;

    let mut edges: Vec<u64> = Vec::with_capacity(m as usize + m as usize / 8);
    for _round in 0..MAX_ROUNDS {
        let missing = m.saturating_sub(edges.len() as u64);
        if missing == 0 {
            break;
        }
        let mut added = 0u64;
        while added < missing {
            let a = out_dist.sample(&mut rng) as u32;
            let b = in_dist.sample(&mut rng) as u32;
            if a == b || b == hard_to {
                continue;
            }
            edges.push(u64::from(a) << 32 | u64::from(b));
            added += 1;
            if added < missing && a != hard_to && rng.gen_bool(RECIPROCITY) {
                edges.push(u64::from(b) << 32 | u64::from(a));
                added += 1;
            }
        }
        edges.sort_unstable();
        edges.dedup();
    }
    if (edges.len() as u64) < m {
        return Err(Error::with_message(
            ErrorCode::Internal,
            format!("generated only {} of {m} distinct relations", edges.len()),
        ));
    }
    // The last round may overshoot only through nothing (it draws exactly what is missing),
    // but keep the invariant explicit: exactly m edges.
    edges.truncate(m as usize);
    // The hard source must not be isolated, or the hard path would be trivially empty.
    let from_lo = edges.partition_point(|&e| ((e >> 32) as u32) < hard_from);
    let from_hi = edges.partition_point(|&e| ((e >> 32) as u32) <= hard_from);
    if from_lo == from_hi {
        let to = if hub != hard_to {
            hub
        } else {
            (hard_from + 1) % n
        };
        // Replaces one edge of the busiest source so the count stays exact.
        let replace = edges.len() - 1;
        edges[replace] = u64::from(hard_from) << 32 | u64::from(to);
        edges.sort_unstable();
        edges.dedup();
        while (edges.len() as u64) < m {
            let a = out_dist.sample(&mut rng) as u32;
            let b = in_dist.sample(&mut rng) as u32;
            if a != b && b != hard_to {
                let e = u64::from(a) << 32 | u64::from(b);
                if let Err(at) = edges.binary_search(&e) {
                    edges.insert(at, e);
                }
            }
        }
    }
    Ok(Network {
        spec: *spec,
        edges,
        hub,
    })
}

impl Network {
    pub fn forward(&self) -> Csr {
        let n = self.spec.profiles();
        Csr::from_sorted(
            n,
            self.edges.iter().map(|&e| ((e >> 32) as u32, e as u32)),
            self.edges.len(),
        )
    }

    pub fn backward(&self) -> Csr {
        let mut rev: Vec<u64> = self.edges.iter().map(|&e| e.rotate_right(32)).collect();
        rev.sort_unstable();
        let n = self.spec.profiles();
        Csr::from_sorted(
            n,
            rev.iter().map(|&e| ((e >> 32) as u32, e as u32)),
            rev.len(),
        )
    }
}

/// Marks every vertex reachable from `start` in `csr`.
pub fn reachable(csr: &Csr, start: u32) -> Vec<bool> {
    let mut seen = vec![false; csr.vertices() as usize];
    let mut queue = std::collections::VecDeque::new();
    seen[start as usize] = true;
    queue.push_back(start);
    while let Some(v) = queue.pop_front() {
        for &w in csr.neighbors(v) {
            if !seen[w as usize] {
                seen[w as usize] = true;
                queue.push_back(w);
            }
        }
    }
    seen
}

/// Reused state of the reference path searches (no reallocation per pair).
pub struct PathSearch {
    stamp: Vec<u32>,
    dist: Vec<u32>,
    /// Which side reached the vertex: 1 forward, 2 backward.
    side: Vec<u8>,
    round: u32,
}

impl PathSearch {
    pub fn new(n: u32) -> PathSearch {
        PathSearch {
            stamp: vec![0; n as usize],
            dist: vec![0; n as usize],
            side: vec![0; n as usize],
            round: 0,
        }
    }

    /// Length in edges of the shortest directed path, None when there is none.
    /// Bidirectional BFS expanding the smaller frontier one whole level at a time, so the
    /// first level on which the searches meet gives the minimum.
    pub fn shortest(&mut self, fwd: &Csr, bwd: &Csr, from: u32, to: u32) -> Option<u32> {
        if from == to {
            return Some(0);
        }
        self.round += 1;
        let r = self.round;
        let mut front_f = vec![from];
        let mut front_b = vec![to];
        for (v, s) in [(from, 1u8), (to, 2u8)] {
            self.stamp[v as usize] = r;
            self.dist[v as usize] = 0;
            self.side[v as usize] = s;
        }
        let (mut depth_f, mut depth_b) = (0u32, 0u32);
        while !front_f.is_empty() && !front_b.is_empty() {
            let forward = front_f.len() <= front_b.len();
            let (front, csr, side, depth) = if forward {
                (&mut front_f, fwd, 1u8, &mut depth_f)
            } else {
                (&mut front_b, bwd, 2u8, &mut depth_b)
            };
            let mut next = Vec::new();
            let mut best: Option<u32> = None;
            for &v in front.iter() {
                for &w in csr.neighbors(v) {
                    let i = w as usize;
                    if self.stamp[i] == r {
                        if self.side[i] != side {
                            let len = *depth + 1 + self.dist[i];
                            best = Some(best.map_or(len, |b| b.min(len)));
                        }
                        continue;
                    }
                    self.stamp[i] = r;
                    self.dist[i] = *depth + 1;
                    self.side[i] = side;
                    next.push(w);
                }
            }
            if best.is_some() {
                return best;
            }
            *depth += 1;
            *front = next;
        }
        None
    }

    /// Distinct vertices at depth 1..=max_depth from `start`, the start excluded (what a
    /// bfs traversal with uniqueVertices "global" and min depth 1 returns).
    pub fn neighborhood(&mut self, fwd: &Csr, start: u32, max_depth: u32) -> Vec<u32> {
        self.round += 1;
        let r = self.round;
        self.stamp[start as usize] = r;
        let mut found = Vec::new();
        let mut front = vec![start];
        for _ in 0..max_depth {
            let mut next = Vec::new();
            for &v in &front {
                for &w in fwd.neighbors(v) {
                    if self.stamp[w as usize] != r {
                        self.stamp[w as usize] = r;
                        next.push(w);
                    }
                }
            }
            found.extend_from_slice(&next);
            front = next;
        }
        found
    }
}

/// The id files of a run and the results a correct server returns for them.
pub struct Workload {
    pub reads: Vec<u32>,
    pub warmup: Vec<u32>,
    pub pairs: Vec<(u32, u32)>,
    pub pair_lengths: Vec<u32>,
    pub hard: (u32, u32),
    pub neighbors_total: u64,
    pub neighbors2_total: u64,
    pub neighbors2data_total: u64,
    /// Per neighbor start vertex: (1-hop count, 1..2-hop count).
    pub neighbor_counts: Vec<(u64, u64)>,
    pub reachable_from_hub: u64,
    pub reaching_hub: u64,
}

/// Draws the id files: warmup ids disjoint from read ids (both from one shuffle of all keys;
/// below 101,000 profiles the read list repeats keys to keep its 100,000 entries), and
/// shortest-path pairs that are connected through the hub.
pub fn workload(net: &Network, fwd: &Csr, bwd: &Csr) -> Result<Workload, Error> {
    let spec = &net.spec;
    let n = spec.profiles();
    let mut rng = profile_rng(spec.seed, 1 << 41);
    let mut all: Vec<u32> = (0..n).collect();
    all.shuffle(&mut rng);
    let warm_len = WARMUP_IDS.min(n as usize / 10);
    let warmup = all[..warm_len].to_vec();
    let rest = &all[warm_len..];
    let reads: Vec<u32> = (0..READ_IDS).map(|i| rest[i % rest.len()]).collect();

    let from_hub = reachable(fwd, net.hub);
    let to_hub = reachable(bwd, net.hub);
    let sources: Vec<u32> = (0..n).filter(|&v| to_hub[v as usize]).collect();
    let targets: Vec<u32> = (0..n).filter(|&v| from_hub[v as usize]).collect();
    if sources.len() < 2 || targets.len() < 2 {
        return Err(Error::with_message(
            ErrorCode::Internal,
            "the generated graph has no connected core",
        ));
    }
    let mut search = PathSearch::new(n);
    let mut pairs = Vec::with_capacity(SHORTEST_PAIRS);
    let mut pair_lengths = Vec::with_capacity(SHORTEST_PAIRS);
    while pairs.len() < SHORTEST_PAIRS {
        let a = sources[rng.gen_range(0..sources.len())];
        let b = targets[rng.gen_range(0..targets.len())];
        if a == b {
            continue;
        }
        let len = search.shortest(fwd, bwd, a, b).ok_or_else(|| {
            Error::with_message(ErrorCode::Internal, "a pair through the hub has no path")
        })?;
        pairs.push((a, b));
        pair_lengths.push(len);
    }
    let hard = spec.hard_pair();
    if search.shortest(fwd, bwd, hard.0, hard.1).is_some() {
        return Err(Error::with_message(
            ErrorCode::Internal,
            "the hard pair is connected",
        ));
    }
    let mut neighbors_total = 0;
    let mut neighbors2_total = 0;
    let mut neighbors2data_total = 0;
    let mut neighbor_counts = Vec::with_capacity(NEIGHBOR_STARTS);
    for (i, &v) in reads.iter().take(NEIGHBOR_STARTS).enumerate() {
        neighbors_total += fwd.neighbors(v).len() as u64;
        let two = search.neighborhood(fwd, v, 2).len() as u64;
        neighbors2_total += two;
        neighbor_counts.push((fwd.neighbors(v).len() as u64, two));
        if i < NEIGHBOR_DATA_STARTS {
            neighbors2data_total += two;
        }
    }
    Ok(Workload {
        reads,
        warmup,
        pairs,
        pair_lengths,
        hard,
        neighbors_total,
        neighbors2_total,
        neighbors2data_total,
        neighbor_counts,
        reachable_from_hub: targets.len() as u64,
        reaching_hub: sources.len() as u64,
    })
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::with_message(ErrorCode::IoError, format!("{}: {e}", path.display()))
}

fn write_json(path: &Path, value: &Value) -> Result<(), Error> {
    let mut text = serde_json::to_vec_pretty(value).unwrap_or_default();
    text.push(b'\n');
    std::fs::write(path, text).map_err(|e| io_error(path, e))
}

/// Summary of a generated data directory (its `meta.json`).
pub fn meta(net: &Network, w: &Workload) -> Value {
    let spec = &net.spec;
    json!({
        "generator": "quiver pokec generate 1",
        "scale": spec.scale,
        "seed": spec.seed,
        "profiles": spec.profiles(),
        "relations": net.edges.len(),
        "hub": key_of(net.hub),
        "reachableFromHub": w.reachable_from_hub,
        "reachingHub": w.reaching_hub,
        "hardPath": {"from": key_of(w.hard.0), "to": key_of(w.hard.1)},
        "expected": {
            "neighbors": w.neighbors_total,
            "neighbors2": w.neighbors2_total,
            "neighbors2data": w.neighbors2data_total,
            "shortestPathLengthSum": w.pair_lengths.iter().map(|&l| u64::from(l)).sum::<u64>(),
            "hardPathLength": Value::Null,
        },
    })
}

/// Writes a complete data directory: profiles.jsonl, relations.jsonl (JSON lines for
/// `/_api/import?type=documents`), ids100000.json, warmup1000.json, shortest1000.json,
/// hardpath.json and meta.json (written last: its presence marks a complete directory).
pub fn write_dataset(spec: &Spec, dir: &Path, progress: bool) -> Result<Value, Error> {
    std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
    let _ = std::fs::remove_file(dir.join("meta.json"));
    let started = std::time::Instant::now();
    let say = |what: &str| {
        if progress {
            eprintln!("[{:7.1} s] {what}", started.elapsed().as_secs_f64());
        }
    };
    let path = dir.join("profiles.jsonl");
    let mut out = BufWriter::with_capacity(
        1 << 20,
        File::create(&path).map_err(|e| io_error(&path, e))?,
    );
    for v in 0..spec.profiles() {
        let doc = profile(spec.seed, u64::from(v), Some(&key_of(v)));
        serde_json::to_writer(&mut out, &doc)
            .map_err(|e| Error::with_message(ErrorCode::IoError, e.to_string()))?;
        out.write_all(b"\n").map_err(|e| io_error(&path, e))?;
    }
    out.flush().map_err(|e| io_error(&path, e))?;
    say(&format!("{} profiles written", spec.profiles()));

    let net = generate_network(spec)?;
    say(&format!("{} relations generated", net.edges.len()));
    let path = dir.join("relations.jsonl");
    let mut out = BufWriter::with_capacity(
        1 << 20,
        File::create(&path).map_err(|e| io_error(&path, e))?,
    );
    for &e in &net.edges {
        writeln!(
            out,
            "{{\"_from\":\"profiles/P{}\",\"_to\":\"profiles/P{}\"}}",
            (e >> 32) + 1,
            (e & 0xffff_ffff) + 1
        )
        .map_err(|e| io_error(&path, e))?;
    }
    out.flush().map_err(|e| io_error(&path, e))?;
    say("relations written");

    let fwd = net.forward();
    let bwd = net.backward();
    let w = workload(&net, &fwd, &bwd)?;
    say("id files and expected results computed");
    let keys = |ids: &[u32]| Value::from(ids.iter().map(|&v| key_of(v)).collect::<Vec<_>>());
    write_json(&dir.join("ids100000.json"), &keys(&w.reads))?;
    write_json(&dir.join("warmup1000.json"), &keys(&w.warmup))?;
    let pairs: Vec<Value> = w
        .pairs
        .iter()
        .zip(&w.pair_lengths)
        .map(|(&(a, b), &len)| json!({"from": key_of(a), "to": key_of(b), "length": len}))
        .collect();
    write_json(&dir.join("shortest1000.json"), &Value::from(pairs))?;
    let counts: Vec<Value> = w
        .reads
        .iter()
        .zip(&w.neighbor_counts)
        .map(|(&v, &(one, two))| json!({"key": key_of(v), "neighbors": one, "neighbors2": two}))
        .collect();
    write_json(&dir.join("neighbors1000.json"), &Value::from(counts))?;
    write_json(
        &dir.join("hardpath.json"),
        &json!({"from": key_of(w.hard.0), "to": key_of(w.hard.1)}),
    )?;
    let meta = meta(&net, &w);
    write_json(&dir.join("meta.json"), &meta)?;
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Spec {
        Spec::new(0.002, 7).unwrap()
    }

    #[test]
    fn sizes_follow_the_scale() {
        let full = Spec::new(1.0, 1).unwrap();
        assert_eq!(full.profiles(), 1_632_803);
        assert_eq!(full.relations(), 30_622_564);
        assert_eq!(full.hard_pair(), (349_621, 1_625_330));
        assert_eq!(key_of(full.hard_pair().0), "P349622");
        assert_eq!(key_of(full.hard_pair().1), "P1625331");
        let s = Spec::new(0.01, 1).unwrap();
        assert_eq!(s.profiles(), 16_328);
        assert_eq!(s.relations(), 306_226);
        let (a, b) = s.hard_pair();
        assert!(a < b && b < s.profiles());
        assert!(Spec::new(0.0, 1).is_err());
        assert!(Spec::new(f64::NAN, 1).is_err());
        assert!(Spec::new(0.00001, 1).is_err());
        assert!(Spec::new(5.0, 1).is_err());
    }

    #[test]
    fn profiles_have_the_pokec_attributes_in_order() {
        let doc = profile(1, 42, Some("P43"));
        let names: Vec<&str> = doc
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(names, ATTRIBUTES.to_vec());
        assert_eq!(doc["_key"], "P43");
        let body = write_body(&small(), 5);
        assert!(body.get("_key").is_none());
        assert_eq!(body.as_object().unwrap().len(), ATTRIBUTES.len() - 1);
        // Value types and distributions over many profiles.
        let docs: Vec<Value> = (0..4000).map(|i| profile(9, i, None)).collect();
        let ages: Vec<u64> = docs.iter().map(|d| d["AGE"].as_u64().unwrap()).collect();
        let zeros = ages.iter().filter(|&&a| a == 0).count();
        assert!((1000..1400).contains(&zeros), "{zeros} zero ages");
        assert!(ages.iter().all(|&a| a <= 80));
        assert!(ages.iter().any(|&a| a > 60));
        let young = ages.iter().filter(|&&a| (14..30).contains(&a)).count();
        assert!(young > ages.len() / 3, "{young} aged 14-29");
        for d in &docs {
            assert!(d["public"].is_u64() && d["completion_percentage"].as_u64().unwrap() <= 100);
            assert!(d["gender"].is_null() || d["gender"].as_u64().unwrap() < 2);
            assert!(d["region"].as_str().unwrap().contains(", "));
            assert_eq!(
                d["last_login"].as_str().unwrap().len(),
                "2012-05-25 11:20:00.0".len()
            );
        }
        let nulls = docs.iter().filter(|d| d["hobbies"].is_null()).count();
        assert!(nulls > 2000 && nulls < 3200, "{nulls} null hobbies");
    }

    #[test]
    fn generation_is_deterministic() {
        let a = generate_network(&small()).unwrap();
        let b = generate_network(&small()).unwrap();
        assert_eq!(a.edges, b.edges);
        assert_eq!(a.hub, b.hub);
        let c = generate_network(&Spec::new(0.002, 8).unwrap()).unwrap();
        assert_ne!(a.edges, c.edges);
        assert_eq!(profile(3, 10, Some("P11")), profile(3, 10, Some("P11")));
        assert_ne!(profile(3, 10, None), profile(3, 11, None));
    }

    #[test]
    fn graph_has_exact_size_no_loops_no_duplicates() {
        let spec = small();
        let net = generate_network(&spec).unwrap();
        assert_eq!(net.edges.len() as u64, spec.relations());
        assert!(net.edges.windows(2).all(|w| w[0] < w[1]));
        assert!(net.edges.iter().all(|&e| (e >> 32) != (e & 0xffff_ffff)));
        assert!(net
            .edges
            .iter()
            .all(|&e| (e >> 32) < u64::from(spec.profiles())));
    }

    #[test]
    fn degree_distribution_is_heavy_tailed_and_reciprocal() {
        let spec = Spec::new(0.005, 3).unwrap();
        let net = generate_network(&spec).unwrap();
        let fwd = net.forward();
        let n = spec.profiles();
        let mut deg: Vec<usize> = (0..n).map(|v| fwd.neighbors(v).len()).collect();
        deg.sort_unstable_by(|a, b| b.cmp(a));
        let mean = net.edges.len() as f64 / f64::from(n);
        assert!((18.0..19.5).contains(&mean));
        // Hubs far above the mean, a top percent holding a large share, most below the mean.
        assert!(deg[0] as f64 > 20.0 * mean, "max degree {}", deg[0]);
        let top: usize = deg[..n as usize / 100].iter().sum();
        assert!(
            top as f64 > 0.10 * net.edges.len() as f64,
            "top 1 % hold {top}"
        );
        let below = deg.iter().filter(|&&d| (d as f64) < mean).count();
        assert!(below > n as usize / 2, "{below} below the mean");
        // About half of the edges have their reverse.
        let mutual = net
            .edges
            .iter()
            .filter(|&&e| net.edges.binary_search(&(e.rotate_right(32))).is_ok())
            .count();
        let share = mutual as f64 / net.edges.len() as f64;
        assert!((0.3..0.8).contains(&share), "reciprocity {share}");
    }

    #[test]
    fn hard_pair_is_unconnected_and_pairs_are_connected() {
        for seed in [1, 2] {
            let spec = Spec::new(0.002, seed).unwrap();
            let net = generate_network(&spec).unwrap();
            let (fwd, bwd) = (net.forward(), net.backward());
            let (from, to) = spec.hard_pair();
            assert!(bwd.neighbors(to).is_empty());
            assert!(!fwd.neighbors(from).is_empty());
            assert!(!reachable(&fwd, from)[to as usize]);
            let w = workload(&net, &fwd, &bwd).unwrap();
            assert_eq!(w.pairs.len(), SHORTEST_PAIRS);
            for (&(a, b), &len) in w.pairs.iter().zip(&w.pair_lengths) {
                assert!(len >= 1);
                // Checked against a plain one-sided BFS (which also proves the connection) on
                // a sample of the pairs.
                if a % 29 == 0 {
                    assert_eq!(bfs_length(&fwd, a, b), Some(len));
                }
            }
            assert_eq!(w.reads.len(), READ_IDS);
            assert!(w.warmup.iter().all(|v| !w.reads.contains(v)));
        }
    }

    fn bfs_length(csr: &Csr, from: u32, to: u32) -> Option<u32> {
        let mut dist = vec![u32::MAX; csr.vertices() as usize];
        dist[from as usize] = 0;
        let mut queue = std::collections::VecDeque::from([from]);
        while let Some(v) = queue.pop_front() {
            if v == to {
                return Some(dist[v as usize]);
            }
            for &w in csr.neighbors(v) {
                if dist[w as usize] == u32::MAX {
                    dist[w as usize] = dist[v as usize] + 1;
                    queue.push_back(w);
                }
            }
        }
        None
    }

    #[test]
    fn reference_searches_on_a_hand_made_graph() {
        // 0->1->2->3, 0->4->3, 5 isolated; 3->0 closes a cycle.
        let edges = [(0, 1), (0, 4), (1, 2), (2, 3), (3, 0), (4, 3)];
        let mut packed: Vec<u64> = edges.iter().map(|&(a, b)| (a << 32) | b).collect();
        packed.sort_unstable();
        let net = Network {
            spec: Spec {
                scale: 1.0,
                seed: 0,
            },
            edges: packed,
            hub: 0,
        };
        let fwd = Csr::from_sorted(
            6,
            net.edges.iter().map(|&e| ((e >> 32) as u32, e as u32)),
            6,
        );
        let mut rev: Vec<u64> = net.edges.iter().map(|&e| e.rotate_right(32)).collect();
        rev.sort_unstable();
        let bwd = Csr::from_sorted(6, rev.iter().map(|&e| ((e >> 32) as u32, e as u32)), 6);
        let mut s = PathSearch::new(6);
        assert_eq!(s.shortest(&fwd, &bwd, 0, 3), Some(2));
        assert_eq!(s.shortest(&fwd, &bwd, 1, 0), Some(3));
        assert_eq!(s.shortest(&fwd, &bwd, 0, 5), None);
        assert_eq!(s.shortest(&fwd, &bwd, 2, 2), Some(0));
        let mut two = s.neighborhood(&fwd, 0, 2);
        two.sort_unstable();
        assert_eq!(two, vec![1, 2, 3, 4]);
        // The start is excluded even when reachable at depth 2.
        let mut two = s.neighborhood(&fwd, 2, 2);
        two.sort_unstable();
        assert_eq!(two, vec![0, 3]);
    }

    #[test]
    fn dataset_files_are_complete() {
        let dir = tempfile::tempdir().unwrap();
        let spec = Spec::new(0.0002, 5).unwrap();
        let meta = write_dataset(&spec, dir.path(), false).unwrap();
        let lines = |f: &str| {
            std::fs::read_to_string(dir.path().join(f))
                .unwrap()
                .lines()
                .count()
        };
        assert_eq!(lines("profiles.jsonl"), spec.profiles() as usize);
        assert_eq!(lines("relations.jsonl") as u64, spec.relations());
        assert_eq!(meta["relations"].as_u64(), Some(spec.relations()));
        let read = |f: &str| -> Value {
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(f)).unwrap()).unwrap()
        };
        assert_eq!(read("ids100000.json").as_array().unwrap().len(), READ_IDS);
        assert_eq!(
            read("shortest1000.json").as_array().unwrap().len(),
            SHORTEST_PAIRS
        );
        assert_eq!(read("meta.json"), meta);
        let counts = read("neighbors1000.json");
        let sum: u64 = counts
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["neighbors"].as_u64().unwrap())
            .sum();
        assert_eq!(Some(sum), meta["expected"]["neighbors"].as_u64());
        assert_eq!(counts[0]["key"], read("ids100000.json")[0]);
        let first: Value = serde_json::from_str(
            std::fs::read_to_string(dir.path().join("relations.jsonl"))
                .unwrap()
                .lines()
                .next()
                .unwrap(),
        )
        .unwrap();
        assert!(first["_from"].as_str().unwrap().starts_with("profiles/P"));
    }
}
