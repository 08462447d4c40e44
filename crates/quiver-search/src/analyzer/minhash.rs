//! `minhash`: the MinHash signature of the tokens of an inner analyzer. For each of
//! `numHashes` hash functions the smallest hash over the distinct inner tokens is one output
//! token (16 hex digits), at positions 0, 1, …; so the share of equal tokens of two
//! signatures estimates the Jaccard similarity of the two token sets. An input without
//! inner tokens has no signature. (ArangoDB prints the hashes in base64; the values are
//! opaque either way and QuiverDB's hash functions are its own.)

use std::collections::BTreeSet;

use quiver_errors::Result;
use serde_json::{json, Map, Value};

use super::pipeline::build_string_member;
use super::props::{object, unsigned};
use super::{Built, Rejection, Token, TokenStream};

/// The largest signature accepted (each input token is hashed this many times).
pub const MAX_HASHES: u64 = 65_536;

#[derive(Debug)]
struct MinHash {
    hashes: usize,
    inner: Box<dyn TokenStream>,
}

/// SplitMix64's finalizer: a bijective mix of 64 bits.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// FNV-1a over the bytes, then mixed: the base hash of a token.
fn base_hash(term: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in term.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    mix(h)
}

/// Hash function `i` of the family applied to a base hash.
fn hash_at(base: u64, i: usize) -> u64 {
    mix(base ^ mix((i as u64).wrapping_add(0x9e37_79b9_7f4a_7c15)))
}

impl TokenStream for MinHash {
    fn analyze(&self, input: &str, strict: bool, out: &mut Vec<Token>) -> Result<()> {
        let mut tokens = Vec::new();
        self.inner.analyze(input, strict, &mut tokens)?;
        let bases: BTreeSet<u64> = tokens.iter().map(|t| base_hash(&t.term)).collect();
        if bases.is_empty() {
            return Ok(());
        }
        for i in 0..self.hashes {
            let min = bases
                .iter()
                .map(|b| hash_at(*b, i))
                .min()
                .unwrap_or(u64::MAX);
            out.push(Token {
                term: format!("{min:016x}"),
                position: u32::try_from(i).unwrap_or(u32::MAX),
                start: 0,
                end: u32::try_from(input.len()).unwrap_or(u32::MAX),
            });
        }
        Ok(())
    }
}

/// `{"analyzer": {"type", "properties"}, "numHashes": uint >= 1}`, both required.
pub(crate) fn build(properties: &Value) -> Result<Built, Rejection> {
    let props = object(properties);
    let hashes = unsigned(props, "numHashes", None, MAX_HASHES)?;
    if hashes < 1 {
        return Err("'numHashes' must be at least 1".to_string());
    }
    let Some(member) = props.get("analyzer").filter(|v| !v.is_null()) else {
        return Err("missing required attribute 'analyzer'".to_string());
    };
    let (inner, json) = build_string_member(member)?;
    let mut normalized = Map::new();
    normalized.insert("analyzer".into(), json);
    normalized.insert("numHashes".into(), json!(hashes));
    Ok(Built {
        properties: Value::Object(normalized),
        stream: Box::new(MinHash {
            hashes: usize::try_from(hashes).unwrap_or(usize::MAX),
            inner,
        }),
    })
}
