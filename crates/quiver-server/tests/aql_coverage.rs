//! docs/aql-coverage.md and quiver-aql agree. Grammar rows: the example of a `served`
//! production parses (`quiver_aql::parser::parse`), a `missing` one does not; a served row
//! names a golden file (crates/quiver-aql/tests/golden/) whose queries use the construct, or a
//! test that exists. Function rows: a `served` function is in the registry
//! (`quiver_aql::functions`) and callable, a `deferred` one resolves but answers error 9, a
//! `missing` one is not registered; every registered function has a row. Implementing a
//! production or a function therefore fails this test until the table says so.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use quiver_aql::functions::{self, FunctionContext};
use serde_json::Value;

/// The issues a row without support may name.
const ISSUES: &[u32] = &[15, 17, 18, 19];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn table() -> String {
    std::fs::read_to_string(repo_root().join("docs/aql-coverage.md")).expect("docs/aql-coverage.md")
}

/// The cells of a table row, without the empty cells outside the outer pipes.
fn cells(line: &str) -> Option<Vec<&str>> {
    let line = line.trim();
    if !line.starts_with('|') || line.starts_with("|---") {
        return None;
    }
    let inner = line.trim_start_matches('|').trim_end_matches('|');
    Some(inner.split('|').map(str::trim).collect())
}

/// Text between the first pair of backticks.
fn code(cell: &str) -> Option<&str> {
    let start = cell.find('`')? + 1;
    let end = cell[start..].find('`')? + start;
    Some(&cell[start..end])
}

struct GrammarRow {
    line: usize,
    production: String,
    example: String,
    served: bool,
    proof: String,
}

struct FunctionRow {
    line: usize,
    name: String,
    status: String,
    proof: String,
}

fn grammar_rows(text: &str) -> Vec<GrammarRow> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(c) = cells(line) else { continue };
        // | production | alternative | `example` | status | proof |
        if c.len() != 5 || c[0] == "production" {
            continue;
        }
        let example = code(c[2]).unwrap_or_else(|| panic!("line {}: example", i + 1));
        let served = match c[3] {
            "served" => true,
            "missing" => false,
            other => panic!("line {}: unknown status {other:?}", i + 1),
        };
        out.push(GrammarRow {
            line: i + 1,
            production: format!("{} → {}", c[0], c[1]),
            example: example.to_string(),
            served,
            proof: c[4].to_string(),
        });
    }
    out
}

fn function_rows(text: &str) -> Vec<FunctionRow> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(c) = cells(line) else { continue };
        // | `NAME()` | page | status | proof |
        if c.len() != 4 || !c[0].starts_with('`') {
            continue;
        }
        let name = code(c[0])
            .and_then(|n| n.strip_suffix("()"))
            .unwrap_or_else(|| panic!("line {}: function name", i + 1));
        out.push(FunctionRow {
            line: i + 1,
            name: name.to_string(),
            status: c[2].to_string(),
            proof: c[3].to_string(),
        });
    }
    out
}

/// Every backticked reference of a proof cell resolves: `dir/file.test` to a golden file
/// (which must mention `needle` in a query, when given), `file::name` to a test that exists.
/// Returns how many references there were.
fn check_references(proof: &str, needle: Option<&str>) -> Result<usize, String> {
    let root = repo_root();
    let golden = root.join("crates/quiver-aql/tests/golden");
    let mut found = 0;
    for piece in proof.split('`').skip(1).step_by(2) {
        if let Some((file, name)) = piece.split_once("::") {
            let candidates = [
                root.join("crates/quiver-server/tests").join(file),
                root.join("tests/e2e").join(file),
            ];
            let text = candidates
                .iter()
                .find_map(|p| std::fs::read_to_string(p).ok())
                .ok_or_else(|| format!("test file {file} not found"))?;
            if !(text.contains(&format!("fn {name}(")) || text.contains(&format!("def {name}("))) {
                return Err(format!("{file} has no test {name}"));
            }
            found += 1;
        } else if piece.ends_with(".test") {
            let text = std::fs::read_to_string(golden.join(piece))
                .map_err(|_| format!("golden file {piece} not found"))?;
            if let Some(needle) = needle {
                if !text.to_uppercase().contains(&needle.to_uppercase()) {
                    return Err(format!("golden file {piece} never mentions {needle}"));
                }
            }
            found += 1;
        }
    }
    Ok(found)
}

fn names_issue(proof: &str) -> bool {
    proof
        .split("issue ")
        .skip(1)
        .filter_map(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .filter_map(|n| n.parse::<u32>().ok())
        .any(|n| ISSUES.contains(&n))
}

#[test]
fn grammar_rows_parse_as_the_table_says() {
    let rows = grammar_rows(&table());
    assert!(rows.len() > 100, "only {} grammar rows parsed", rows.len());
    let mut failures = Vec::new();
    for row in &rows {
        let parsed = quiver_aql::parser::parse(&row.example);
        let problem = match (row.served, &parsed) {
            (true, Err(e)) => Some(format!("marked served, but does not parse: {e:?}")),
            (false, Ok(_)) => Some("marked missing, but parses".to_string()),
            (true, Ok(_)) => match check_references(&row.proof, None) {
                Ok(0) => Some("a served row names a golden file or a test".to_string()),
                Ok(_) => None,
                Err(e) => Some(e),
            },
            (false, Err(_)) if !names_issue(&row.proof) => {
                Some("a missing row names its issue".to_string())
            }
            (false, Err(_)) => None,
        };
        if let Some(p) = problem {
            failures.push(format!(
                "line {}: {} `{}`: {p}",
                row.line, row.production, row.example
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} grammar rows disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Calls a function with `min_args` nulls outside any query: whether its implementation is
/// the placeholder of a deferred feature (error 9).
fn deferred(name: &str) -> bool {
    let def = functions::lookup(name).expect("registered");
    let args = vec![Value::Null; def.min_args];
    let mut ctx = FunctionContext::new();
    match def.invoke(&mut ctx, &args) {
        Err(e) => e.code == quiver_errors::ErrorCode::NotImplemented,
        Ok(_) => false,
    }
}

#[test]
fn function_rows_match_the_registry() {
    let rows = function_rows(&table());
    assert!(rows.len() > 250, "only {} function rows parsed", rows.len());
    let mut failures = Vec::new();
    let mut listed = HashSet::new();
    for row in &rows {
        if !listed.insert(row.name.clone()) {
            failures.push(format!("line {}: {}() listed twice", row.line, row.name));
        }
        let registered = functions::lookup(&row.name).is_some();
        let problem = match row.status.as_str() {
            "served" if !registered => Some("marked served, but not registered".to_string()),
            "served" if deferred(&row.name) => {
                Some("marked served, but calling it is error 9".to_string())
            }
            "served" => match check_references(&row.proof, Some(&format!("{}(", row.name))) {
                Ok(0) => Some("a served row names a golden file or a test".to_string()),
                Ok(_) => None,
                Err(e) => Some(e),
            },
            "deferred" if !registered => Some("marked deferred, but not registered".to_string()),
            "deferred" if !deferred(&row.name) => {
                Some("marked deferred, but calling it is not error 9".to_string())
            }
            "missing" if registered => Some("marked missing, but registered".to_string()),
            "deferred" | "missing" if !names_issue(&row.proof) => {
                Some("names no issue".to_string())
            }
            "deferred" | "missing" => None,
            other => Some(format!("unknown status {other:?}")),
        };
        if let Some(p) = problem {
            failures.push(format!("line {}: {}(): {p}", row.line, row.name));
        }
    }
    for def in functions::all() {
        if !listed.contains(def.name) {
            failures.push(format!("registered function {}() has no row", def.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} function rows disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The served functions no golden case calls, called here.
#[test]
fn functions_without_a_golden_case() {
    let mut ctx = FunctionContext::new();
    let zones = functions::call(&mut ctx, "DATE_TIMEZONES", &[]).unwrap();
    let zones = zones.as_array().expect("an array of zone names");
    assert!(zones.iter().any(|z| z == "Europe/Berlin"), "{zones:?}");
    assert!(zones.iter().any(|z| z == "UTC" || z == "Etc/UTC"));
    // Without authentication there is no user: ArangoDB answers null.
    assert_eq!(
        functions::call(&mut ctx, "CURRENT_USER", &[]).unwrap(),
        Value::Null
    );
}

#[test]
fn table_cells_are_read_as_written() {
    let text = "| let_list | a | `LET a = 1, b = 2 RETURN a` | served | `x.test` |\n\
                | `ABS()` | numeric.md | served | `functions/numeric.test` |";
    let g = grammar_rows(text);
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].example, "LET a = 1, b = 2 RETURN a");
    let f = function_rows(text);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].name, "ABS");
    assert!(names_issue("deferred (issue 17)"));
    assert!(!names_issue("issue 3"));
}
