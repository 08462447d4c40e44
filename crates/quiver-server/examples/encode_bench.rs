//! Cost of turning an insert body into the stored encoding: parse into a `Value` then
//! serialize the attributes (the path before `json::encode_document`), versus the one-pass
//! encoder. Run on an idle-ish machine, best of several runs:
//!
//!     cargo run --release -p quiver-server --example encode_bench -- 2000000
use std::time::Instant;

use quiver_server::json;
use serde_json::Value;

const BODIES: [&str; 2] = [
    // vs-floor.sh's insert body.
    r#"{"name":"Alice Example","age":34,"city":"Berlin-Mitte","tags":["a","b"],"active":true}"#,
    // A nested document with numbers.
    r#"{"user":{"id":12345,"name":"Bob","roles":["admin","dev"],"score":98.5},"items":[{"sku":"A-1","qty":2,"price":9.99},{"sku":"B-7","qty":1,"price":120.0}],"note":"deliver \"fast\"","ts":1763800000}"#,
];

fn via_value(body: &[u8], out: &mut Vec<u8>) {
    let Value::Object(map) = json::parse(body).unwrap() else {
        unreachable!()
    };
    for (name, value) in &map {
        out.push(b',');
        serde_json::to_writer(&mut *out, name).unwrap();
        out.push(b':');
        serde_json::to_writer(&mut *out, value).unwrap();
    }
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    for body in BODIES {
        let body = body.as_bytes();
        let mut sink = 0usize;
        let start = Instant::now();
        for _ in 0..n {
            let mut out = Vec::with_capacity(body.len());
            via_value(body, &mut out);
            sink += out.len();
        }
        let value_ns = start.elapsed().as_nanos() as f64 / n as f64;
        let start = Instant::now();
        for _ in 0..n {
            sink += json::encode_document(body).unwrap().members.len();
        }
        let one_pass_ns = start.elapsed().as_nanos() as f64 / n as f64;
        println!(
            "{} bytes: parse+serialize {value_ns:.0} ns, one pass {one_pass_ns:.0} ns ({:.0} %) [{sink}]",
            body.len(),
            100.0 * one_pass_ns / value_ns
        );
    }
}
