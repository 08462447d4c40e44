//! Malformed and random queries never panic or hang: bounded property tests over the parser
//! and, for inputs that parse, the whole pipeline (with a runtime and memory limit).

mod support;

use support::CursorJson;

use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use quiver_aql::source::memory::MemorySource;
use quiver_aql::QueryService;
use serde_json::json;

const TOKENS: &[&str] = &[
    "FOR",
    "IN",
    "RETURN",
    "FILTER",
    "LET",
    "SORT",
    "LIMIT",
    "COLLECT",
    "INTO",
    "WITH",
    "COUNT",
    "AGGREGATE",
    "KEEP",
    "WINDOW",
    "INSERT",
    "UPDATE",
    "REPLACE",
    "REMOVE",
    "UPSERT",
    "OPTIONS",
    "DISTINCT",
    "ASC",
    "DESC",
    "AND",
    "OR",
    "NOT",
    "LIKE",
    "ANY",
    "ALL",
    "NONE",
    "OUTBOUND",
    "GRAPH",
    "NULL",
    "true",
    "false",
    "x",
    "y",
    "c",
    "CURRENT",
    "NEW",
    "OLD",
    "1",
    "0",
    "2.5",
    "-3",
    "1e3",
    "'s'",
    "\"t\"",
    "@p",
    "@@c",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    ".",
    "..",
    "?",
    "=",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "!",
    "&&",
    "||",
    "=~",
    "!~",
    "[*]",
    "[**]",
    "LENGTH(",
    "SUM(",
    "CONCAT(",
    "/*",
    "*/",
    "//",
    "\n",
    "`q`",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..40).prop_map(|t| t.join(" "))
}

fn service() -> QueryService {
    let source = Arc::new(MemorySource::new());
    source
        .create_collection(
            "_system",
            "c",
            false,
            vec![
                json!({"_key": "a", "x": 1}),
                json!({"_key": "b", "x": [1, 2]}),
            ],
        )
        .unwrap();
    QueryService::new(source)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic_the_parser(input in "\\PC{0,200}") {
        let start = Instant::now();
        let _ = quiver_aql::parser::parse(&input);
        prop_assert!(start.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn string_and_name_escapes_never_panic(body in "[\\\\ud83ceé😀`´'\"0-9a-fA-F]{0,40}") {
        for quote in ["'", "\"", "`", "\u{b4}"] {
            let _ = quiver_aql::parser::parse(&format!("RETURN {quote}{body}{quote}"));
            let _ = quiver_aql::parser::parse(&format!("RETURN {quote}{body}"));
        }
    }

    #[test]
    fn token_soup_never_panics_the_pipeline(query in token_soup()) {
        let s = service();
        let start = Instant::now();
        let body = json!({"query": query, "bindVars": {"p": 1, "@c": "c"}, "memoryLimit": 10_000_000, "options": {"maxRuntime": 0.5}});
        if let Err(e) = s.create_cursor_json("_system", support::cursor(&body)) {
            // Unused bind parameters are the common outcome; any error must be well-formed.
            prop_assert!(e.number() > 0);
            prop_assert!(!e.message.is_empty());
        }
        prop_assert!(start.elapsed() < Duration::from_secs(5), "query took too long: {}", query);
    }
}

#[test]
fn pathological_inputs_fail_cleanly() {
    let deep_parens = format!("RETURN {}1{}", "(".repeat(10_000), ")".repeat(10_000));
    let deep_objects = format!("RETURN {}1{}", "{a:".repeat(10_000), "}".repeat(10_000));
    let deep_not = format!("RETURN {}true", "NOT ".repeat(10_000));
    let deep_subqueries = format!("RETURN {}1{}", "(RETURN ".repeat(5_000), ")".repeat(5_000));
    let long_expansion = format!("RETURN [1]{}", "[*]".repeat(10_000));
    let long_chain = format!("RETURN 1{}", " + 1".repeat(20_000));
    for q in [
        deep_parens,
        deep_objects,
        deep_not,
        deep_subqueries,
        long_expansion,
        long_chain,
    ] {
        let start = Instant::now();
        let r = quiver_aql::parser::parse(&q);
        assert!(start.elapsed() < Duration::from_secs(5));
        if let Err(e) = r {
            assert!(e.number() == 1501 || e.number() == 1524, "{}", e.message);
        }
    }
    // The deepest inputs the parser accepts must also survive planning, folding and
    // execution (all recursive) on a default-sized thread stack.
    let s = service();
    let limit_cases = [
        format!("RETURN {}1{}", "(".repeat(95), ")".repeat(95)),
        format!("RETURN {}1{}", "[".repeat(95), "]".repeat(95)),
        format!("LET x = 1 RETURN x{}", " + x".repeat(490)),
        format!("RETURN {}1{}", "(RETURN ".repeat(45), ")".repeat(45)),
        format!(
            "FOR i IN 1..2 RETURN {}i{}",
            "(FOR j IN [i] RETURN ".repeat(30),
            ")".repeat(30)
        ),
        format!("RETURN {}1", "NOT ".repeat(95)),
    ];
    for q in &limit_cases {
        match s.create_cursor_json("_system", support::cursor(&json!({"query": q}))) {
            Ok((_, r)) => assert_eq!(r["hasMore"], false),
            // Nested subqueries may not redeclare an outer variable (1511).
            Err(e) => assert!([1501, 1511, 1524].contains(&e.number()), "{}", e.message),
        }
    }
    for q in [
        "RETURN \"\u{0}\"",
        "RETURN '\\u12'",
        "RETURN 1..",
        "FOR x IN c FILTER x._key == RETURN x",
        "RETURN @",
        "RETURN ```",
    ] {
        let _ = s.create_cursor_json("_system", support::cursor(&json!({"query": q})));
    }
}
