//! What the goldenscript tests share — the core's document scripts and the server's HTTP
//! scripts (included there by path): symbolic names for what differs from run to run
//! (revisions print as `R1`, `R2`, … in the order first seen, generated numeric keys as `K1`,
//! `K2`, …, numeric ids as `I1`, `I2`, …, and scripts may use those names wherever a revision,
//! key or id is expected), and the
//! `scripts!` macro that makes one test per script file and checks that none is forgotten.

/// One `#[test]` per script `NAME.txt` in `$dir` (relative to the crate), run by `$run`, and a
/// test that every file in `$dir` is one of them.
macro_rules! scripts {
    ($dir:literal, $run:path, [$($name:ident),* $(,)?]) => {
        $(
            #[test]
            fn $name() {
                $run(&std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join($dir)
                    .join(concat!(stringify!($name), ".txt")));
            }
        )*

        #[test]
        fn every_script_file_is_run() {
            let listed = [$(concat!(stringify!($name), ".txt")),*];
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join($dir);
            for entry in std::fs::read_dir(&dir).expect("the scripts directory") {
                let name = entry.expect("a directory entry").file_name();
                let name = name.to_string_lossy();
                assert!(
                    listed.contains(&name.as_ref()),
                    "{}/{name} is not listed in scripts!()",
                    $dir
                );
            }
        }
    };
}

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

/// Symbolic names for what differs from run to run: revisions, generated keys and ids.
#[derive(Default)]
pub struct Names {
    to_name: HashMap<String, String>,
    to_real: HashMap<String, String>,
    /// How many names each prefix has given out.
    counters: HashMap<&'static str, usize>,
    /// Keys scripts give themselves: shown as they are, even when all digits.
    given_keys: HashSet<String>,
}

impl Names {
    fn name(&mut self, real: &str, prefix: &'static str) -> String {
        if let Some(name) = self.to_name.get(real) {
            return name.clone();
        }
        let counter = self.counters.entry(prefix).or_insert(0);
        *counter += 1;
        let name = format!("{prefix}{counter}");
        assert!(
            !self.to_real.contains_key(&name),
            "symbolic name {name} given twice"
        );
        self.to_name.insert(real.to_string(), name.clone());
        self.to_real.insert(name.clone(), real.to_string());
        name
    }

    pub fn revision(&mut self, real: &str) -> String {
        self.name(real, "R")
    }

    /// Numeric ids (collections, databases, indexes as `collection/number`) print as `I1`,
    /// `I2`, ….
    pub fn id(&mut self, real: &str) -> String {
        let (prefix, number) = match real.rsplit_once('/') {
            Some((prefix, number)) => (Some(prefix), number),
            None => (None, real),
        };
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            return real.to_string();
        }
        let name = self.name(number, "I");
        match prefix {
            Some(prefix) => format!("{prefix}/{name}"),
            None => name,
        }
    }

    /// Whether `key` is one the server generated: all digits and not given by the script.
    pub fn generated(&self, key: &str) -> bool {
        !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit()) && !self.given_keys.contains(key)
    }

    /// Generated keys are shown by name.
    pub fn key(&mut self, real: &str) -> String {
        if self.generated(real) {
            self.name(real, "K")
        } else {
            real.to_string()
        }
    }

    /// The real value behind a symbolic name (anything else unchanged).
    pub fn real(&self, text: &str) -> String {
        self.to_real
            .get(text)
            .cloned()
            .unwrap_or_else(|| text.to_string())
    }

    /// `value` with revisions and generated keys shown by name, nested objects included.
    pub fn show(&mut self, value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut out = Map::with_capacity(map.len());
                for (attr, v) in map {
                    let shown = match (attr.as_str(), v) {
                        ("_rev" | "_oldRev", Value::String(rev)) => {
                            Value::String(self.revision(rev))
                        }
                        // A collection's revision; "0" before its first write.
                        ("revision", Value::String(rev)) if rev != "0" => {
                            Value::String(self.revision(rev))
                        }
                        ("id", Value::String(id)) => Value::String(self.id(id)),
                        ("globallyUniqueId", Value::String(id)) => {
                            Value::String(self.name(id, "G"))
                        }
                        ("_key", Value::String(key)) => Value::String(self.key(key)),
                        ("_id", Value::String(id)) => Value::String(match id.split_once('/') {
                            Some((coll, key)) => format!("{coll}/{}", self.key(key)),
                            None => id.clone(),
                        }),
                        _ => self.show(v),
                    };
                    out.insert(attr.clone(), shown);
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| self.show(v)).collect()),
            // A revision already named, wherever it appears (lists of revisions).
            Value::String(text) => match self.to_name.get(text) {
                Some(name) if name.starts_with('R') => Value::String(name.clone()),
                _ => value.clone(),
            },
            other => other.clone(),
        }
    }

    /// Script input with names replaced by the real revisions and keys they stand for.
    pub fn input(&mut self, value: Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(attr, v)| {
                        let v = match (attr.as_str(), v) {
                            ("_key", Value::String(s)) => {
                                let real = self.real(&s);
                                if real == s {
                                    self.given_keys.insert(s);
                                }
                                Value::String(real)
                            }
                            ("_rev", Value::String(s)) => Value::String(self.real(&s)),
                            ("_id", Value::String(id)) => Value::String(match id.split_once('/') {
                                Some((coll, key)) => format!("{coll}/{}", self.real(key)),
                                None => id,
                            }),
                            (_, v) => self.input(v),
                        };
                        (attr, v)
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.into_iter().map(|v| self.input(v)).collect()),
            Value::String(s) => Value::String(self.real(&s)),
            other => other,
        }
    }
}
