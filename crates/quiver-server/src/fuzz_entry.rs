//! Entry points of the parser fuzz targets (`fuzz/server-parsers`): each feeds arbitrary
//! bytes to one parser of untrusted input exactly as the server calls it, and discards the
//! outcome — a fuzzer only looks for panics, hangs and runaway memory. Not used by the server.

use bytes::Bytes;
use http::{HeaderMap, Method};

/// JSON request bodies: the value parser (duplicate attributes, depth) and the one-pass
/// document encoder of inserts.
pub fn json_body(data: &[u8]) {
    let _ = crate::json::parse(data);
    let _ = crate::json::encode_document(data);
    let _ = crate::json::parse_body(data);
}

/// `/_api/batch`: the first line is the content type (boundary), the rest the multipart body;
/// every part's embedded request is parsed as the batch handler does.
pub fn batch(data: &[u8]) {
    let split = data.iter().position(|b| *b == b'\n').unwrap_or(data.len());
    let content_type = std::str::from_utf8(&data[..split]).ok();
    let body = &data[(split + 1).min(data.len())..];
    let boundary = crate::multipart::boundary(content_type).unwrap_or_else(|_| "XX".into());
    let whole = Bytes::copy_from_slice(body);
    if let Ok(parts) = crate::multipart::split_parts(&whole, &boundary) {
        for part in parts {
            let _ = crate::multipart::parse_embedded(part.message, "db", Some(&whole));
        }
    }
}

/// `/_api/import`: the body read as JSON lines, as one array and as the tabular format.
pub fn import(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    use crate::import_format::{collect_items, Format};
    let mut empty = 0;
    for format in [
        Format::Documents,
        Format::Array,
        Format::Tabular {
            ignore_missing: false,
        },
        Format::Tabular {
            ignore_missing: true,
        },
    ] {
        let _ = collect_items(text, format, &mut empty);
    }
}

/// The request target: path segments (percent-decoding, the `/_db/{name}/` prefix) and the
/// query string.
pub fn request_target(data: &[u8]) {
    let Ok(target) = std::str::from_utf8(data) else {
        return;
    };
    let _ = crate::request::parse_query(target);
    let _ = crate::Request::new(Method::GET, target, HeaderMap::new(), Bytes::new());
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// A few thousand random and mutated inputs per entry point: the same code paths the
    /// fuzzers drive, kept honest in the test suite (no panic).
    #[test]
    fn every_entry_point_survives_random_input() {
        let seeds: [&[u8]; 4] = [
            br#"{"a": [1, {"b": "c"}], "d": null}"#,
            b"multipart/form-data; boundary=XX\n--XX\r\nContent-Type: application/x-arango-batchpart\r\n\r\nGET /_api/version HTTP/1.1\r\n\r\n--XX--\r\n",
            b"[\"a\",\"b\"]\n[1,2]\n{\"x\":1}\n",
            b"/_db/%E2%82%AC/_api/document/c/k?waitForSync=true&x=%zz",
        ];
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for round in 0..2000 {
            let seed = seeds[round % seeds.len()];
            let mut input = seed.to_vec();
            for _ in 0..rng.gen_range(0..8) {
                let pos = rng.gen_range(0..=input.len());
                match rng.gen_range(0..3) {
                    0 if pos < input.len() => input[pos] = rng.gen(),
                    1 => input.insert(pos, rng.gen()),
                    _ => input.truncate(pos),
                }
            }
            json_body(&input);
            batch(&input);
            import(&input);
            request_target(&input);
        }
    }
}
