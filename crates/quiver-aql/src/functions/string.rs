//! String functions. Positions and lengths count Unicode characters (code points), as
//! ArangoDB does; non-string inputs are stringified with `TO_STRING` rules unless noted.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;

use base64::Engine as _;
use md5::Digest as _;
use quiver_errors::{ErrorCode, Result};
use regex::Regex;
use serde_json::Value;

use super::{arg, def, volatile, FunctionContext, FunctionDef};
use crate::value::{self, to_str};

pub(super) const FUNCTIONS: &[FunctionDef] = &[
    def("CHAR_LENGTH", 1, 1, char_length),
    def("CONCAT", 1, super::VARIADIC, concat),
    def("CONCAT_SEPARATOR", 2, super::VARIADIC, concat_separator),
    def("CONTAINS", 2, 3, contains),
    def("CRC32", 1, 1, crc32),
    def("ENCODE_URI_COMPONENT", 1, 1, encode_uri_component),
    def("FIND_FIRST", 2, 4, find_first),
    def("FIND_LAST", 2, 4, find_last),
    def("FNV64", 1, 1, fnv64),
    def("IPV4_FROM_NUMBER", 1, 1, ipv4_from_number),
    def("IPV4_TO_NUMBER", 1, 1, ipv4_to_number),
    def("IS_IPV4", 1, 1, is_ipv4),
    def("JSON_PARSE", 1, 1, json_parse),
    def("JSON_STRINGIFY", 1, 1, json_stringify),
    def("LEFT", 2, 2, left),
    def("LEVENSHTEIN_DISTANCE", 2, 2, levenshtein_distance),
    def("LEVENSHTEIN_MATCH", 3, 6, levenshtein_match),
    def("LIKE", 2, 3, like),
    def("LOWER", 1, 1, lower),
    def("LTRIM", 1, 2, ltrim),
    def("MD5", 1, 1, md5),
    def(
        "NGRAM_POSITIONAL_SIMILARITY",
        3,
        3,
        ngram_positional_similarity,
    ),
    def("NGRAM_SIMILARITY", 3, 3, ngram_similarity_fn),
    volatile("RANDOM_TOKEN", 1, 1, random_token),
    def("REGEX_MATCHES", 2, 3, regex_matches),
    def("REGEX_REPLACE", 3, 4, regex_replace),
    def("REGEX_SPLIT", 2, 4, regex_split),
    def("REGEX_TEST", 2, 3, regex_test),
    def("REPEAT", 2, 3, repeat),
    def("REVERSE", 1, 1, reverse),
    def("RIGHT", 2, 2, right),
    def("RTRIM", 1, 2, rtrim),
    def("SHA1", 1, 1, sha1),
    def("SHA256", 1, 1, sha256),
    def("SHA512", 1, 1, sha512),
    def("SOUNDEX", 1, 1, soundex),
    def("SPLIT", 1, 3, split),
    def("STARTS_WITH", 2, 3, starts_with),
    def("SUBSTITUTE", 2, 4, substitute),
    def("SUBSTRING", 2, 3, substring),
    def("SUBSTRING_BYTES", 2, 5, substring_bytes),
    def("TO_BASE64", 1, 1, to_base64),
    def("TO_CHAR", 1, 1, to_char),
    def("TO_HEX", 1, 1, to_hex),
    def("TRIM", 1, 2, trim),
    def("UPPER", 1, 1, upper),
    volatile("UUID", 0, 0, uuid),
];

fn s(v: Value) -> Result<Value> {
    Ok(v)
}

fn string(text: impl Into<String>) -> Result<Value> {
    Ok(Value::String(text.into()))
}

/// An integer argument (`TO_NUMBER` rules, truncated).
pub(crate) fn int_arg(args: &[Value], i: usize) -> i64 {
    let f = value::to_number(arg(args, i));
    if f.is_finite() {
        f.trunc() as i64
    } else {
        0
    }
}

fn char_length(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let v = arg(args, 0);
    // ArangoDB counts the bytes of the JSON text for arrays and objects, characters otherwise.
    let n = match v {
        Value::Array(_) | Value::Object(_) => value::to_json_string(v).len(),
        Value::Number(n) => value::format_f64(n.as_f64().unwrap_or(0.0)).len(),
        other => to_str(other).chars().count(),
    };
    s(Value::from(n))
}

fn append_concat(out: &mut String, v: &Value) {
    match v {
        Value::Null => {}
        Value::String(text) => out.push_str(text),
        other => out.push_str(&value::to_string(other)),
    }
}

fn concat(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let mut out = String::new();
    match args {
        [Value::Array(items)] => items.iter().for_each(|v| append_concat(&mut out, v)),
        _ => args.iter().for_each(|v| append_concat(&mut out, v)),
    }
    string(out)
}

fn concat_separator(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let separator = to_str(arg(args, 0));
    let values: &[Value] = match &args[1..] {
        [Value::Array(items)] => items,
        rest => rest,
    };
    let mut out = String::new();
    let mut first = true;
    for v in values.iter().filter(|v| !v.is_null()) {
        if !first {
            out.push_str(&separator);
        }
        first = false;
        append_concat(&mut out, v);
    }
    string(out)
}

/// Character index of the first occurrence of `needle` in `haystack` at or after character
/// `from`.
fn char_find(haystack: &str, needle: &str, from_char: usize) -> Option<usize> {
    let start_byte = haystack
        .char_indices()
        .nth(from_char)
        .map_or(haystack.len(), |(b, _)| b);
    if from_char > 0 && start_byte == haystack.len() && !needle.is_empty() {
        return None;
    }
    haystack[start_byte..]
        .find(needle)
        .map(|b| from_char + haystack[start_byte..start_byte + b].chars().count())
}

fn contains(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let text = to_str(arg(args, 0));
    let search = to_str(arg(args, 1));
    // An empty needle is "not found" in ArangoDB.
    let found = if search.is_empty() {
        None
    } else {
        char_find(&text, &search, 0)
    };
    if value::to_bool(arg(args, 2)) {
        s(Value::from(found.map_or(-1, |p| p as i64)))
    } else {
        s(Value::Bool(found.is_some()))
    }
}

fn crc32(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let text = to_str(arg(args, 0));
    string(format!("{:X}", crc32c::crc32c(text.as_bytes())))
}

fn fnv64(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let text = to_str(arg(args, 0));
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    string(format!("{hash:X}"))
}

fn encode_uri_component(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let text = to_str(arg(args, 0));
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'_' | b'.' | b'!' | b'~' | b'*' | b'\'' | b'(' | b')'
            )
        {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    string(out)
}

/// Shared core of FIND_FIRST / FIND_LAST, following ArangoDB: a negative start finds
/// nothing, `end` is the last character position a match may cover, matches are searched
/// left to right without overlap.
fn find(args: &[Value], last: bool) -> Value {
    let text: Vec<char> = to_str(arg(args, 0)).chars().collect();
    let search: Vec<char> = to_str(arg(args, 1)).chars().collect();
    let start = int_arg(args, 2);
    if start < 0 {
        return Value::from(-1);
    }
    let mut max_end = text.len() as i64;
    let mut empty_search_bump = 0;
    if !arg(args, 3).is_null() {
        max_end = int_arg(args, 3);
        if max_end < start || max_end < 0 {
            return Value::from(-1);
        }
        empty_search_bump = 1;
    }
    if search.is_empty() {
        return Value::from(if last {
            max_end.saturating_add(empty_search_bump)
        } else {
            start
        });
    }
    if text.is_empty() || search.len() > text.len() {
        return Value::from(-1);
    }
    let mut found = -1i64;
    let mut pos = 0usize;
    while pos + search.len() <= text.len() {
        if text[pos..pos + search.len()] == search[..] {
            let p = pos as i64;
            if p >= start && p + search.len() as i64 - 1 <= max_end {
                found = p;
                if !last {
                    break;
                }
            }
            pos += search.len();
        } else {
            pos += 1;
        }
    }
    Value::from(found)
}

fn find_first(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    s(find(args, false))
}

fn find_last(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    s(find(args, true))
}

/// Dotted quad without leading zeros, each part 0..=255.
fn parse_ipv4(text: &str) -> Option<u32> {
    let mut parts = 0;
    let mut result: u32 = 0;
    for part in text.split('.') {
        parts += 1;
        if parts > 4
            || part.is_empty()
            || part.len() > 3
            || !part.bytes().all(|b| b.is_ascii_digit())
            || (part.len() > 1 && part.starts_with('0'))
        {
            return None;
        }
        let n: u32 = part.parse().ok()?;
        if n > 255 {
            return None;
        }
        result = (result << 8) | n;
    }
    (parts == 4).then_some(result)
}

fn ipv4_from_number(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let v = arg(args, 0);
    let n = match v.as_f64() {
        Some(f) if f.trunc() >= 0.0 && f.trunc() <= f64::from(u32::MAX) => f.trunc() as u32,
        _ => return s(ctx.invalid_argument()),
    };
    let o = n.to_be_bytes();
    string(format!("{}.{}.{}.{}", o[0], o[1], o[2], o[3]))
}

fn ipv4_to_number(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    match arg(args, 0) {
        Value::String(text) => match parse_ipv4(text) {
            Some(n) => s(Value::from(n)),
            None => s(ctx.invalid_argument()),
        },
        _ => s(ctx.invalid_argument()),
    }
}

fn is_ipv4(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    s(Value::Bool(match arg(args, 0) {
        Value::String(text) => parse_ipv4(text).is_some(),
        _ => false,
    }))
}

fn json_parse(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    match arg(args, 0) {
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(v) => s(v),
            Err(_) => s(ctx.invalid_argument()),
        },
        _ => s(ctx.invalid_argument()),
    }
}

fn json_stringify(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    string(value::to_json_string(arg(args, 0)))
}

fn left(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let text = to_str(arg(args, 0));
    let n = int_arg(args, 1).max(0) as usize;
    string(text.chars().take(n).collect::<String>())
}

fn right(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let text = to_str(arg(args, 0));
    let n = int_arg(args, 1).max(0) as usize;
    let len = text.chars().count();
    string(text.chars().skip(len.saturating_sub(n)).collect::<String>())
}

/// Rows of an `m`-column dynamic-programming table between two checks of the query's stop
/// conditions: about 64 Ki cells, a few hundred microseconds.
fn rows_per_check(m: usize) -> usize {
    (1 << 16) / (m + 1) + 1
}

/// Damerau-Levenshtein distance (optimal string alignment variant) over characters. O(n·m)
/// time on two strings of any length, so it stops (1500) when the query is killed or passes
/// its `maxRuntime`.
pub(crate) fn damerau_levenshtein(a: &str, b: &str, ctx: &FunctionContext<'_>) -> Result<usize> {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let (n, m) = (a.len(), b.len());
    if n == 0 {
        return Ok(m);
    }
    if m == 0 {
        return Ok(n);
    }
    let every = rows_per_check(m);
    // Three rolling rows keep memory at O(m).
    let mut prev2 = vec![0usize; m + 1];
    let mut prev: Vec<usize> = (0..=m).collect();
    let mut cur = vec![0usize; m + 1];
    for i in 1..=n {
        if i % every == 0 {
            ctx.check_stop()?;
        }
        cur[0] = i;
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(prev2[j - 2] + 1);
            }
            cur[j] = d;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    Ok(prev[m])
}

fn levenshtein_distance(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let a = to_str(arg(args, 0));
    let b = to_str(arg(args, 1));
    s(Value::from(damerau_levenshtein(&a, &b, ctx)?))
}

/// Plain Levenshtein distance (no transpositions) over characters; stops like
/// [`damerau_levenshtein`].
fn levenshtein(a: &[char], b: &[char], ctx: &FunctionContext<'_>) -> Result<usize> {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0usize; b.len() + 1];
    let every = rows_per_check(b.len());
    for (i, ca) in a.iter().enumerate() {
        if (i + 1) % every == 0 {
            ctx.check_stop()?;
        }
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j + 1] + 1).min(cur[j] + 1).min(prev[j] + cost);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    Ok(prev[b.len()])
}

/// Largest distance ArangoDB accepts without transpositions (its automata stop there; with
/// transpositions it falls back to computing the distance).
const MAX_LEVENSHTEIN_DISTANCE: i64 = 4;

/// LEVENSHTEIN_MATCH outside of SEARCH: whether the distance is at most `maxDistance`.
/// `maxTerms` only matters for View searches; `prefix` (6th argument) must match the start of
/// the first string exactly and the rest is compared with the target.
fn levenshtein_match(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Value::Number(max) = arg(args, 2) else {
        return s(ctx.invalid_argument());
    };
    let max = max.as_f64().unwrap_or(0.0).trunc() as i64;
    let transpositions = match args.get(3) {
        None => true,
        Some(Value::Bool(t)) => *t,
        Some(_) => return s(ctx.invalid_argument()),
    };
    if max < 0 || (!transpositions && max > MAX_LEVENSHTEIN_DISTANCE) {
        return s(ctx.invalid_argument());
    }
    let text = |v: &Value| match v {
        Value::String(t) => t.clone(),
        _ => String::new(),
    };
    let mut lhs = text(arg(args, 0));
    let rhs = text(arg(args, 1));
    if let Some(Value::String(prefix)) = args.get(5) {
        match lhs.strip_prefix(prefix.as_str()) {
            Some(rest) => lhs = rest.to_string(),
            None => return s(Value::Bool(false)),
        }
    }
    let distance = if transpositions {
        damerau_levenshtein(&lhs, &rhs, ctx)?
    } else {
        let a: Vec<char> = lhs.chars().collect();
        let b: Vec<char> = rhs.chars().collect();
        levenshtein(&a, &b, ctx)?
    };
    s(Value::Bool(distance as i64 <= max))
}

fn like(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let text = to_str(arg(args, 0));
    let pattern = to_str(arg(args, 1));
    s(Value::Bool(value::like(
        &text,
        &pattern,
        value::to_bool(arg(args, 2)),
    )))
}

fn lower(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    string(to_str(arg(args, 0)).to_lowercase())
}

fn upper(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    string(to_str(arg(args, 0)).to_uppercase())
}

const DEFAULT_TRIM: &str = "\r\n \t";

fn trim_with(text: &str, chars: &str, start: bool, end: bool) -> String {
    let is_trim = |c: char| chars.contains(c);
    let mut t = text;
    if start {
        t = t.trim_start_matches(is_trim);
    }
    if end {
        t = t.trim_end_matches(is_trim);
    }
    t.to_string()
}

fn trim_chars(args: &[Value]) -> Cow<'_, str> {
    // LTRIM/RTRIM stringify whatever is given (an explicit null trims nothing).
    if args.len() < 2 {
        Cow::Borrowed(DEFAULT_TRIM)
    } else {
        to_str(arg(args, 1))
    }
}

fn ltrim(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    string(trim_with(
        &to_str(arg(args, 0)),
        &trim_chars(args),
        true,
        false,
    ))
}

fn rtrim(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    string(trim_with(
        &to_str(arg(args, 0)),
        &trim_chars(args),
        false,
        true,
    ))
}

fn trim(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let text = to_str(arg(args, 0));
    match arg(args, 1) {
        Value::Number(_) => {
            let (start, end) = match int_arg(args, 1) {
                1 => (true, false),
                2 => (false, true),
                _ => (true, true),
            };
            string(trim_with(&text, DEFAULT_TRIM, start, end))
        }
        Value::String(chars) => string(trim_with(&text, chars, true, true)),
        _ => string(trim_with(&text, DEFAULT_TRIM, true, true)),
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

fn md5(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    string(hex(&md5::Md5::digest(to_str(arg(args, 0)).as_bytes())))
}

fn sha1(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    string(hex(&sha1::Sha1::digest(to_str(arg(args, 0)).as_bytes())))
}

fn sha256(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    string(hex(&sha2::Sha256::digest(to_str(arg(args, 0)).as_bytes())))
}

fn sha512(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    string(hex(&sha2::Sha512::digest(to_str(arg(args, 0)).as_bytes())))
}

fn to_base64(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    string(base64::engine::general_purpose::STANDARD.encode(to_str(arg(args, 0)).as_bytes()))
}

fn to_hex(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    string(hex(to_str(arg(args, 0)).as_bytes()))
}

/// n-gram similarity after Kondrak ("N-gram similarity and distance"), computed the way
/// ArangoDB's search library does, including its single-precision arithmetic (the results are
/// f32 values widened to f64) and its carry of the upper-left cell between rows, so that the
/// numbers match ArangoDB's digit for digit.
///
/// `binary`: NGRAM_SIMILARITY (only whole n-grams match, normalised by the target's n-gram
/// count); otherwise NGRAM_POSITIONAL_SIMILARITY (partial matches count, normalised by the
/// longer string's n-gram count). O(n·m) like the Levenshtein functions, and stops like them.
fn ngram_similarity(
    target: &[char],
    src: &[char],
    n: usize,
    binary: bool,
    ctx: &FunctionContext<'_>,
) -> Result<f32> {
    let (mut target, mut src) = (target, src);
    if !binary && target.len() > src.len() {
        std::mem::swap(&mut target, &mut src);
    }
    if target.len() < n || src.len() < n {
        if binary {
            return Ok(if target == src { 1.0 } else { 0.0 });
        }
        if target.is_empty() && src.is_empty() {
            return Ok(1.0);
        }
        let matched = target.iter().zip(src).filter(|(a, b)| a == b).count();
        return Ok(matched as f32 / src.len() as f32);
    }
    let t_count = target.len() - n + 1;
    let s_count = src.len() - n + 1;
    let mut cache = vec![0f32; s_count + 1];
    let mut d = 0f32;
    let every = rows_per_check(s_count.saturating_mul(n));
    for (i, t) in target.windows(n).enumerate() {
        if (i + 1) % every == 0 {
            ctx.check_stop()?;
        }
        for (j, s) in src.windows(n).enumerate() {
            let similarity = if binary {
                if t == s {
                    1.0
                } else {
                    0.0
                }
            } else {
                t.iter().zip(s).filter(|(a, b)| a == b).count() as f32 / n as f32
            };
            let tmp = cache[j + 1];
            cache[j + 1] = cache[j].max(cache[j + 1]).max(d + similarity);
            d = tmp;
        }
    }
    Ok(cache[s_count] / (if binary { t_count } else { s_count }) as f32)
}

fn ngram_args(
    ctx: &mut FunctionContext<'_>,
    args: &[Value],
) -> Option<(Vec<char>, Vec<char>, usize)> {
    let (Value::String(a), Value::String(b)) = (arg(args, 0), arg(args, 1)) else {
        ctx.invalid_argument();
        return None;
    };
    let Some(n) = arg(args, 2).as_f64() else {
        ctx.invalid_argument();
        return None;
    };
    if n < 1.0 {
        ctx.warn_null(
            ErrorCode::BadParameter,
            "Invalid ngram size. Should be 1 or greater",
        );
        return None;
    }
    Some((a.chars().collect(), b.chars().collect(), n as usize))
}

fn ngram_similarity_fn(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some((input, target, n)) = ngram_args(ctx, args) else {
        return s(Value::Null);
    };
    let similarity = ngram_similarity(&target, &input, n, true, ctx)?;
    s(value::number(f64::from(similarity)))
}

fn ngram_positional_similarity(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some((input, target, n)) = ngram_args(ctx, args) else {
        return s(Value::Null);
    };
    let similarity = ngram_similarity(&target, &input, n, false, ctx)?;
    s(value::number(f64::from(similarity)))
}

fn random_token(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    use rand::Rng as _;
    let n = value::to_number(arg(args, 0)).trunc();
    if !(0.0..=65536.0).contains(&n) {
        // An error, not a warning, in ArangoDB.
        return Err(quiver_errors::Error::with_message(
            ErrorCode::QueryFunctionArgumentTypeMismatch,
            format!(
                "invalid argument type in call to function '{}()'",
                ctx.function_name()
            ),
        ));
    }
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::thread_rng();
    let token: String = (0..n as usize)
        .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char)
        .collect();
    string(token)
}

/// Compiled regexes by pattern, one map per case sensitivity. Queries call REGEX_* per row
/// with the same pattern, so compiling once matters; lookups borrow the pattern (no allocation
/// on a hit) and the cache is per thread and bounded.
fn with_regex<T>(pattern: &str, case_insensitive: bool, f: impl FnOnce(&Regex) -> T) -> Option<T> {
    thread_local! {
        static CACHE: RefCell<[HashMap<String, Regex>; 2]> =
            RefCell::new([HashMap::new(), HashMap::new()]);
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        let map = &mut cache[usize::from(case_insensitive)];
        if let Some(re) = map.get(pattern) {
            return Some(f(re));
        }
        let re = regex::RegexBuilder::new(pattern)
            .case_insensitive(case_insensitive)
            .size_limit(1 << 20)
            .build()
            .ok()?;
        if map.len() >= 64 {
            map.clear();
        }
        let out = f(&re);
        map.insert(pattern.to_string(), re);
        Some(out)
    })
}

fn invalid_regex(ctx: &mut FunctionContext<'_>) -> Result<Value> {
    s(ctx.warn_null(ErrorCode::QueryInvalidRegex, ""))
}

fn regex_test(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let text = to_str(arg(args, 0));
    let pattern = to_str(arg(args, 1));
    match with_regex(&pattern, value::to_bool(arg(args, 2)), |re| {
        re.is_match(&text)
    }) {
        Some(b) => s(Value::Bool(b)),
        None => invalid_regex(ctx),
    }
}

fn regex_matches(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let text = to_str(arg(args, 0));
    let pattern = to_str(arg(args, 1));
    let result = with_regex(&pattern, value::to_bool(arg(args, 2)), |re| {
        re.captures(&text).map(|caps| {
            caps.iter()
                .map(|m| Value::String(m.map_or(String::new(), |m| m.as_str().to_string())))
                .collect::<Vec<_>>()
        })
    });
    match result {
        Some(Some(items)) => s(Value::Array(items)),
        Some(None) => s(Value::Null),
        None => invalid_regex(ctx),
    }
}

fn regex_replace(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let text = to_str(arg(args, 0));
    let pattern = to_str(arg(args, 1));
    let replacement = to_str(arg(args, 2));
    match with_regex(&pattern, value::to_bool(arg(args, 3)), |re| {
        re.replace_all(&text, replacement.as_ref()).into_owned()
    }) {
        Some(out) => string(out),
        None => invalid_regex(ctx),
    }
}

fn regex_split(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let text = to_str(arg(args, 0));
    let pattern = to_str(arg(args, 1));
    let limit = if args.len() == 4 {
        let Value::Number(n) = arg(args, 3) else {
            return s(ctx.invalid_argument());
        };
        let l = n.as_f64().unwrap_or(0.0).trunc();
        if l < 0.0 {
            return s(Value::Null);
        }
        if l == 0.0 {
            return s(Value::Array(Vec::new()));
        }
        l as usize
    } else {
        usize::MAX
    };
    let result = with_regex(&pattern, value::to_bool(arg(args, 2)), |re| {
        let mut out = Vec::new();
        let mut last = 0;
        for caps in re.captures_iter(&text) {
            let Some(m) = caps.get(0) else { continue };
            if m.start() == m.end() && (m.start() == 0 || m.start() == text.len()) {
                continue;
            }
            out.push(Value::String(text[last..m.start()].to_string()));
            // Captured groups are kept, as in JavaScript's split.
            for group in caps.iter().skip(1).flatten() {
                out.push(Value::String(group.as_str().to_string()));
            }
            last = m.end();
            if out.len() >= limit {
                break;
            }
        }
        if out.len() < limit {
            out.push(Value::String(text[last..].to_string()));
        }
        out.truncate(limit);
        out
    });
    match result {
        Some(items) => s(Value::Array(items)),
        None => invalid_regex(ctx),
    }
}

fn reverse(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    match arg(args, 0) {
        Value::String(text) => string(text.chars().rev().collect::<String>()),
        Value::Array(items) => s(Value::Array(items.iter().rev().cloned().collect())),
        _ => s(ctx.array_expected()),
    }
}

/// Longest string REPEAT() builds, as in ArangoDB.
const MAX_REPEAT_BYTES: usize = 16 * 1024 * 1024;

fn repeat(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let count = int_arg(args, 1);
    if count == 0 {
        return string("");
    }
    if count < 0 {
        return s(ctx.invalid_argument());
    }
    let text = to_str(arg(args, 0));
    let separator = if args.len() > 2 {
        to_str(arg(args, 2))
    } else {
        Cow::Borrowed("")
    };
    let total = (text.len() as u128 + separator.len() as u128) * count as u128;
    if total > MAX_REPEAT_BYTES as u128 + separator.len() as u128 {
        return s(ctx.warn_null(
            ErrorCode::ResourceLimit,
            "Output string of AQL REPEAT function was limited to 16MB.",
        ));
    }
    let mut out = String::with_capacity(total as usize);
    for i in 0..count {
        if i > 0 {
            out.push_str(&separator);
        }
        out.push_str(&text);
    }
    string(out)
}

fn to_char(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let code = match arg(args, 0).as_f64() {
        Some(f) if f >= 0.0 => f as u32,
        _ => return s(ctx.invalid_argument()),
    };
    match char::from_u32(code) {
        Some(c) => string(c.to_string()),
        None => s(ctx.invalid_argument()),
    }
}

fn soundex(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    // ArangoDB's variant: the first ASCII letter is kept, every other character maps to its
    // digit (letters without one and non-letters map to nothing and reset the "previous
    // digit"), repeated digits collapse, the result is padded with '0' to four characters.
    fn code(c: char) -> Option<char> {
        Some(match c {
            'b' | 'f' | 'p' | 'v' => '1',
            'c' | 'g' | 'j' | 'k' | 'q' | 's' | 'x' | 'z' => '2',
            'd' | 't' => '3',
            'l' => '4',
            'm' | 'n' => '5',
            'r' => '6',
            _ => return None,
        })
    }
    let text = to_str(arg(args, 0)).to_ascii_lowercase();
    let mut chars = text.trim().chars().skip_while(|c| !c.is_ascii_alphabetic());
    let Some(first) = chars.next() else {
        return string("");
    };
    let mut out = String::with_capacity(4);
    out.push(first.to_ascii_uppercase());
    let mut previous = None;
    for c in chars {
        let current = code(c);
        if let Some(digit) = current {
            if current != previous {
                out.push(digit);
                if out.len() >= 4 {
                    break;
                }
            }
        }
        previous = current;
    }
    while out.len() < 4 {
        out.push('0');
    }
    string(out)
}

fn split(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let limit = if args.len() == 3 {
        let Value::Number(n) = arg(args, 2) else {
            return s(ctx.invalid_argument());
        };
        let l = n.as_f64().unwrap_or(0.0).trunc();
        if l < 0.0 {
            return s(Value::Null);
        }
        if l == 0.0 {
            return s(Value::Array(Vec::new()));
        }
        l as usize
    } else {
        usize::MAX
    };
    if args.len() == 1 {
        return s(Value::Array(vec![arg(args, 0).clone()]));
    }
    let separators: Vec<Cow<'_, str>> = match arg(args, 1) {
        Value::Object(_) => return s(ctx.invalid_argument()),
        Value::Array(items) => items.iter().map(to_str).collect(),
        other => vec![to_str(other)],
    };
    let text = to_str(arg(args, 0));
    let mut out = Vec::new();
    if separators.iter().all(|sep| sep.is_empty()) {
        for c in text.chars().take(limit) {
            out.push(Value::String(c.to_string()));
        }
        return s(Value::Array(out));
    }
    let mut rest: &str = &text;
    while out.len() < limit {
        // The earliest match of any separator (first listed wins on ties).
        let next = separators
            .iter()
            .filter(|sep| !sep.is_empty())
            .filter_map(|sep| rest.find(sep.as_ref()).map(|p| (p, sep.len())))
            .min_by_key(|(p, _)| *p);
        match next {
            Some((p, len)) => {
                out.push(Value::String(rest[..p].to_string()));
                rest = &rest[p + len..];
            }
            None => {
                out.push(Value::String(rest.to_string()));
                break;
            }
        }
    }
    s(Value::Array(out))
}

fn starts_with(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let text = to_str(arg(args, 0));
    match arg(args, 1) {
        Value::Array(prefixes) => {
            let min = if arg(args, 2).is_null() {
                1
            } else {
                int_arg(args, 2)
            };
            let matched = prefixes
                .iter()
                .filter(|p| text.starts_with(to_str(p).as_ref()))
                .count() as i64;
            s(Value::Bool(matched >= min))
        }
        prefix => s(Value::Bool(text.starts_with(to_str(prefix).as_ref()))),
    }
}

fn substitute(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let search = arg(args, 1);
    let mut limit_index = 3;
    let mut pairs: Vec<(String, String)> = Vec::new();
    match search {
        Value::Object(map) => {
            if args.len() > 3 {
                return s(ctx.warn_null(ErrorCode::QueryFunctionArgumentNumberMismatch, ""));
            }
            limit_index = 2;
            for (k, v) in map {
                let r = match v {
                    Value::Null => String::new(),
                    Value::String(r) => r.clone(),
                    _ => return s(ctx.invalid_argument()),
                };
                pairs.push((k.clone(), r));
            }
        }
        _ => {
            let searches: Vec<String> = match search {
                Value::Array(items) => {
                    let mut v = Vec::with_capacity(items.len());
                    for item in items {
                        match item {
                            Value::String(t) => v.push(t.clone()),
                            _ => return s(ctx.invalid_argument()),
                        }
                    }
                    v
                }
                Value::String(t) => vec![t.clone()],
                _ => return s(ctx.invalid_argument()),
            };
            // Replacements: an array maps element-wise (missing ones remove the match), a
            // plain string replaces every search string, no argument removes matches.
            let replacements: Option<Vec<String>> = match arg(args, 2) {
                Value::Null if args.len() < 3 => None,
                Value::Array(items) => {
                    let mut v = Vec::with_capacity(items.len());
                    for item in items {
                        match item {
                            Value::Null => v.push(String::new()),
                            Value::String(t) => v.push(t.clone()),
                            _ => return s(ctx.invalid_argument()),
                        }
                    }
                    Some(v)
                }
                Value::String(t) => Some(vec![t.clone(); searches.len()]),
                _ => return s(ctx.invalid_argument()),
            };
            for (i, k) in searches.into_iter().enumerate() {
                let r = replacements
                    .as_ref()
                    .and_then(|rs| rs.get(i).cloned())
                    .unwrap_or_default();
                pairs.push((k, r));
            }
        }
    }
    let limit = if arg(args, limit_index).is_null() {
        usize::MAX
    } else {
        let l = int_arg(args, limit_index);
        if l == 0 {
            return s(arg(args, 0).clone());
        }
        if l < 0 {
            usize::MAX
        } else {
            l as usize
        }
    };
    if pairs.is_empty() {
        return s(arg(args, 0).clone());
    }
    let text = to_str(arg(args, 0));
    let pairs: Vec<&(String, String)> = pairs.iter().filter(|(k, _)| !k.is_empty()).collect();
    let mut out = String::with_capacity(text.len());
    let mut replaced = 0;
    let mut i = 0;
    while i < text.len() {
        if replaced < limit {
            if let Some((k, r)) = pairs
                .iter()
                .find(|(k, _)| text[i..].starts_with(k.as_str()))
            {
                out.push_str(r);
                i += k.len();
                replaced += 1;
                continue;
            }
        }
        // Advance by one whole character.
        let ch_len = text[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&text[i..i + ch_len]);
        i += ch_len;
    }
    string(out)
}

fn substring(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let text = to_str(arg(args, 0));
    let len = text.chars().count() as i64;
    let mut offset = int_arg(args, 1);
    if offset < 0 {
        offset = (len + offset).max(0);
    }
    let count = if arg(args, 2).is_null() {
        len
    } else {
        int_arg(args, 2).max(0)
    };
    string(
        text.chars()
            .skip(offset as usize)
            .take(count as usize)
            .collect::<String>(),
    )
}

fn substring_bytes(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Value::String(text) = arg(args, 0) else {
        return s(ctx.warn_null(ErrorCode::BadParameter, ""));
    };
    if text.is_empty() {
        return string("");
    }
    let bytes = text.as_bytes();
    let len = bytes.len() as i64;
    let mut offset = int_arg(args, 1);
    offset = if offset < 0 {
        (len + offset).max(0)
    } else {
        offset.min(len)
    };
    let length = if args.len() >= 3 {
        int_arg(args, 2).max(0)
    } else {
        len
    };
    // Optional 4th/5th arguments widen the window by whole characters to the left/right.
    let left = if args.len() >= 4 { int_arg(args, 3) } else { 0 };
    let right = match args.len() {
        5 => int_arg(args, 4),
        4 => left,
        _ => 0,
    };
    let is_continuation = |i: usize| i < bytes.len() && bytes[i] & 0xC0 == 0x80;
    let mut lhs = offset as usize;
    let mut rhs = lhs + length.min(len - offset) as usize;
    if is_continuation(lhs) || is_continuation(rhs) {
        return s(ctx.warn_null(ErrorCode::BadParameter, ""));
    }
    let mut budget = left;
    while budget > 0 && lhs > 0 {
        lhs -= 1;
        if !is_continuation(lhs) {
            budget -= 1;
        }
    }
    let mut budget = right;
    while budget > 0 && rhs < bytes.len() {
        rhs += 1;
        while is_continuation(rhs) {
            rhs += 1;
        }
        budget -= 1;
    }
    match text.get(lhs..rhs) {
        Some(part) => string(part),
        None => s(ctx.warn_null(ErrorCode::BadParameter, "")),
    }
}

fn uuid(_: &mut FunctionContext<'_>, _: &[Value]) -> Result<Value> {
    string(uuid::Uuid::new_v4().to_string())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{invalid, ok, run, warns};
    use serde_json::json;

    #[test]
    fn lengths_and_concatenation() {
        assert_eq!(ok("CHAR_LENGTH", vec![json!("foo")]), json!(3));
        assert_eq!(ok("CHAR_LENGTH", vec![json!("电脑坏了")]), json!(4));
        assert_eq!(ok("CHAR_LENGTH", vec![json!({"foo": "bar"})]), json!(13));
        assert_eq!(ok("CHAR_LENGTH", vec![json!(["ä"])]), json!(6));
        assert_eq!(ok("CHAR_LENGTH", vec![json!(true)]), json!(4));
        assert_eq!(ok("CHAR_LENGTH", vec![json!(null)]), json!(0));
        assert_eq!(
            ok("CONCAT", vec![json!("foo"), json!("bar"), json!("baz")]),
            json!("foobarbaz")
        );
        assert_eq!(
            ok("CONCAT", vec![json!(1), json!(2), json!(3)]),
            json!("123")
        );
        assert_eq!(
            ok(
                "CONCAT",
                vec![json!(null), json!(false), json!(0), json!(true), json!("")]
            ),
            json!("false0true")
        );
        assert_eq!(
            ok("CONCAT", vec![json!([5, 6]), json!({"foo": "bar"})]),
            json!("[5,6]{\"foo\":\"bar\"}")
        );
        assert_eq!(ok("CONCAT", vec![json!([1, null, "x"])]), json!("1x"));
        assert_eq!(
            ok("CONCAT", vec![json!([[5, 6], {"foo": "bar"}])]),
            json!("[5,6]{\"foo\":\"bar\"}")
        );
        assert_eq!(
            ok(
                "CONCAT_SEPARATOR",
                vec![json!(", "), json!("foo"), json!("bar"), json!("baz")]
            ),
            json!("foo, bar, baz")
        );
        assert_eq!(
            ok(
                "CONCAT_SEPARATOR",
                vec![json!(", "), json!([null, false, 0, true, ""])]
            ),
            json!("false, 0, true, ")
        );
        assert_eq!(
            ok(
                "CONCAT_SEPARATOR",
                vec![json!("-"), json!([5, 6]), json!({"foo": "bar"})]
            ),
            json!("[5,6]-{\"foo\":\"bar\"}")
        );
    }

    #[test]
    fn searching() {
        assert_eq!(
            ok("CONTAINS", vec![json!("foobarbaz"), json!("bar")]),
            json!(true)
        );
        assert_eq!(
            ok("CONTAINS", vec![json!("foobarbaz"), json!("horse")]),
            json!(false)
        );
        assert_eq!(
            ok(
                "CONTAINS",
                vec![json!("foobarbaz"), json!("bar"), json!(true)]
            ),
            json!(3)
        );
        assert_eq!(
            ok(
                "CONTAINS",
                vec![json!("foobarbaz"), json!("horse"), json!(true)]
            ),
            json!(-1)
        );
        assert_eq!(
            ok("CONTAINS", vec![json!("äöübar"), json!("bar"), json!(true)]),
            json!(3)
        );
        assert_eq!(ok("CONTAINS", vec![json!("abc"), json!("")]), json!(false));
        assert_eq!(
            ok("CONTAINS", vec![json!("abc"), json!(""), json!(true)]),
            json!(-1)
        );
        assert_eq!(
            ok(
                "FIND_FIRST",
                vec![json!("foobarbaz"), json!("ba"), json!(-1)]
            ),
            json!(-1)
        );
        assert_eq!(
            ok("FIND_FIRST", vec![json!("foobarbaz"), json!("ba")]),
            json!(3)
        );
        assert_eq!(
            ok(
                "FIND_FIRST",
                vec![json!("foobarbaz"), json!("ba"), json!(4)]
            ),
            json!(6)
        );
        assert_eq!(
            ok(
                "FIND_FIRST",
                vec![json!("foobarbaz"), json!("ba"), json!(0), json!(3)]
            ),
            json!(-1)
        );
        assert_eq!(
            ok("FIND_FIRST", vec![json!("foobarbaz"), json!(""), json!(2)]),
            json!(2)
        );
        assert_eq!(ok("FIND_FIRST", vec![json!("äbcä"), json!("cä")]), json!(2));
        assert_eq!(
            ok("FIND_LAST", vec![json!("foobarbaz"), json!("ba")]),
            json!(6)
        );
        assert_eq!(
            ok("FIND_LAST", vec![json!("foobarbaz"), json!("ba"), json!(7)]),
            json!(-1)
        );
        assert_eq!(
            ok(
                "FIND_LAST",
                vec![json!("foobarbaz"), json!("ba"), json!(0), json!(4)]
            ),
            json!(3)
        );
        assert_eq!(ok("FIND_LAST", vec![json!("abc"), json!("")]), json!(3));
        assert_eq!(
            ok(
                "FIND_LAST",
                vec![json!("abc"), json!(""), json!(0), json!(1e300)]
            ),
            json!(i64::MAX)
        );
        assert_eq!(
            ok(
                "SUBSTRING_BYTES",
                vec![json!("abc"), json!(1), json!(1e300)]
            ),
            json!("bc")
        );
    }

    #[test]
    fn hashes_and_encodings() {
        assert_eq!(ok("CRC32", vec![json!("foobar")]), json!("D5F5C7F"));
        assert_eq!(
            ok("FNV64", vec![json!("foobar")]),
            json!("85944171F73967E8")
        );
        assert_eq!(
            ok("MD5", vec![json!("foobar")]),
            json!("3858f62230ac3c915f300c664312c63f")
        );
        assert_eq!(
            ok("SHA1", vec![json!("foobar")]),
            json!("8843d7f92416211de9ebb963ff4ce28125932878")
        );
        assert_eq!(
            ok("SHA256", vec![json!("foobar")]),
            json!("c3ab8ff13720e8ad9047dd39466b3c8974e592c2fa383d4a3960714caef0c4f2")
        );
        assert_eq!(
            ok("SHA512", vec![json!("")]).as_str().map(str::len),
            Some(128)
        );
        assert_eq!(ok("TO_BASE64", vec![json!("ABC.")]), json!("QUJDLg=="));
        assert_eq!(ok("TO_BASE64", vec![json!("123456")]), json!("MTIzNDU2"));
        assert_eq!(ok("TO_HEX", vec![json!("ABC.")]), json!("4142432e"));
        assert_eq!(ok("TO_HEX", vec![json!("ü")]), json!("c3bc"));
        assert_eq!(
            ok("ENCODE_URI_COMPONENT", vec![json!("fünf %")]),
            json!("f%C3%BCnf%20%25")
        );
        assert_eq!(
            ok("ENCODE_URI_COMPONENT", vec![json!("a-_.!~*'()b/?")]),
            json!("a-_.!~*'()b%2F%3F")
        );
        let u = ok("UUID", vec![]);
        assert_eq!(u.as_str().map(str::len), Some(36));
        assert_ne!(u, ok("UUID", vec![]));
        let t = ok("RANDOM_TOKEN", vec![json!(8)]);
        assert_eq!(t.as_str().map(str::len), Some(8));
        assert_eq!(ok("RANDOM_TOKEN", vec![json!(0)]), json!(""));
        assert_eq!(
            super::super::testutil::error("RANDOM_TOKEN", vec![json!(-1)]),
            1542
        );
        assert_eq!(
            super::super::testutil::error("RANDOM_TOKEN", vec![json!(65537)]),
            1542
        );
    }

    #[test]
    fn ipv4() {
        assert_eq!(ok("IPV4_FROM_NUMBER", vec![json!(0)]), json!("0.0.0.0"));
        assert_eq!(
            ok("IPV4_FROM_NUMBER", vec![json!(134744072)]),
            json!("8.8.8.8")
        );
        assert_eq!(
            ok("IPV4_FROM_NUMBER", vec![json!(3232235521u64)]),
            json!("192.168.0.1")
        );
        invalid("IPV4_FROM_NUMBER", vec![json!(-23)]);
        invalid("IPV4_FROM_NUMBER", vec![json!(4294967296u64)]);
        invalid("IPV4_FROM_NUMBER", vec![json!("1")]);
        assert_eq!(ok("IPV4_FROM_NUMBER", vec![json!(1.9)]), json!("0.0.0.1"));
        assert_eq!(
            ok("IPV4_TO_NUMBER", vec![json!("127.0.0.1")]),
            json!(2130706433)
        );
        assert_eq!(ok("IPV4_TO_NUMBER", vec![json!("0.0.0.0")]), json!(0));
        invalid("IPV4_TO_NUMBER", vec![json!("milk")]);
        invalid("IPV4_TO_NUMBER", vec![json!(12)]);
        assert_eq!(ok("IS_IPV4", vec![json!("127.0.0.1")]), json!(true));
        assert_eq!(ok("IS_IPV4", vec![json!("008.008.008.008")]), json!(false));
        assert_eq!(ok("IS_IPV4", vec![json!("12345.2.3.4")]), json!(false));
        assert_eq!(ok("IS_IPV4", vec![json!("12.34")]), json!(false));
        assert_eq!(ok("IS_IPV4", vec![json!("1.2.3.256")]), json!(false));
        assert_eq!(ok("IS_IPV4", vec![json!(8888)]), json!(false));
    }

    #[test]
    fn json() {
        assert_eq!(ok("JSON_PARSE", vec![json!("123")]), json!(123));
        assert_eq!(
            ok("JSON_PARSE", vec![json!("[ true, false, null, -0.5 ]")]),
            json!([true, false, null, -0.5])
        );
        assert_eq!(ok("JSON_PARSE", vec![json!("{\"a\": 1}")]), json!({"a": 1}));
        assert_eq!(ok("JSON_PARSE", vec![json!("\"abc\"")]), json!("abc"));
        invalid("JSON_PARSE", vec![json!("abc")]);
        invalid("JSON_PARSE", vec![json!(1)]);
        assert_eq!(ok("JSON_STRINGIFY", vec![json!(true)]), json!("true"));
        assert_eq!(ok("JSON_STRINGIFY", vec![json!("abc")]), json!("\"abc\""));
        assert_eq!(
            ok("JSON_STRINGIFY", vec![json!([1, {"2": 0.5}])]),
            json!("[1,{\"2\":0.5}]")
        );
    }

    #[test]
    fn slicing() {
        assert_eq!(ok("LEFT", vec![json!("foobar"), json!(3)]), json!("foo"));
        assert_eq!(
            ok("LEFT", vec![json!("foobar"), json!(10)]),
            json!("foobar")
        );
        assert_eq!(ok("LEFT", vec![json!("äöü"), json!(2)]), json!("äö"));
        assert_eq!(ok("LEFT", vec![json!("foobar"), json!(-1)]), json!(""));
        assert_eq!(ok("RIGHT", vec![json!("foobar"), json!(3)]), json!("bar"));
        assert_eq!(
            ok("RIGHT", vec![json!("foobar"), json!(10)]),
            json!("foobar")
        );
        assert_eq!(ok("RIGHT", vec![json!("äöü"), json!(1)]), json!("ü"));
        assert_eq!(
            ok("SUBSTRING", vec![json!("Holy Guacamole!"), json!(5)]),
            json!("Guacamole!")
        );
        assert_eq!(
            ok(
                "SUBSTRING",
                vec![json!("Holy Guacamole!"), json!(10), json!(4)]
            ),
            json!("mole")
        );
        assert_eq!(
            ok(
                "SUBSTRING",
                vec![json!("Holy Guacamole!"), json!(-5), json!(4)]
            ),
            json!("mole")
        );
        assert_eq!(
            ok("SUBSTRING", vec![json!("abc"), json!(-10)]),
            json!("abc")
        );
        assert_eq!(
            ok("SUBSTRING", vec![json!("电脑坏了"), json!(1), json!(2)]),
            json!("脑坏")
        );
        assert_eq!(ok("SUBSTRING", vec![json!(null), json!(0)]), json!(""));
        assert_eq!(
            ok("SUBSTRING_BYTES", vec![json!("We ❤️ avocado!"), json!(10)]),
            json!("avocado!")
        );
        assert_eq!(
            ok(
                "SUBSTRING_BYTES",
                vec![json!("We ❤️ avocado!"), json!(3), json!(3)]
            ),
            json!("❤")
        );
        assert_eq!(
            ok(
                "SUBSTRING_BYTES",
                vec![json!("We ❤️ avocado!"), json!(-15), json!(6)]
            ),
            json!("❤️")
        );
        warns(
            "SUBSTRING_BYTES",
            vec![json!("We ❤️ avocado!"), json!(-15), json!(4)],
            10,
        );
        warns("SUBSTRING_BYTES", vec![json!(12), json!(0)], 10);
        assert_eq!(
            ok(
                "SUBSTRING_BYTES",
                vec![json!("We ❤️ avocado!"), json!(10), json!(3), json!(1)]
            ),
            json!(" avoc")
        );
    }

    #[test]
    fn distances() {
        assert_eq!(
            ok("LEVENSHTEIN_DISTANCE", vec![json!("foobar"), json!("bar")]),
            json!(3)
        );
        assert_eq!(
            ok("LEVENSHTEIN_DISTANCE", vec![json!(" "), json!("")]),
            json!(1)
        );
        assert_eq!(
            ok(
                "LEVENSHTEIN_DISTANCE",
                vec![json!("der mötör trötet"), json!("der trötet")]
            ),
            json!(6)
        );
        assert_eq!(
            ok("LEVENSHTEIN_DISTANCE", vec![json!("ab"), json!("ba")]),
            json!(1)
        );
        // ArangoDB computes these in single precision: 8/9 as f32, widened.
        let eight_ninths = json!(0.8888888955116272);
        assert_eq!(
            ok(
                "NGRAM_SIMILARITY",
                vec![json!("quick fox"), json!("quick foxx"), json!(2)]
            ),
            eight_ninths
        );
        assert_eq!(
            ok(
                "NGRAM_POSITIONAL_SIMILARITY",
                vec![json!("quick fox"), json!("quick foxx"), json!(2)]
            ),
            eight_ninths
        );
        assert_eq!(
            ok(
                "NGRAM_SIMILARITY",
                vec![json!("abc"), json!("abc"), json!(2)]
            ),
            json!(1)
        );
        assert_eq!(
            ok("NGRAM_SIMILARITY", vec![json!("ab"), json!("ab"), json!(3)]),
            json!(1)
        );
        assert_eq!(
            ok("NGRAM_SIMILARITY", vec![json!("ab"), json!("ac"), json!(3)]),
            json!(0)
        );
        assert_eq!(
            ok(
                "NGRAM_POSITIONAL_SIMILARITY",
                vec![json!("ab"), json!("ac"), json!(3)]
            ),
            json!(0.5)
        );
        assert_eq!(
            ok(
                "NGRAM_POSITIONAL_SIMILARITY",
                vec![json!(""), json!(""), json!(2)]
            ),
            json!(1)
        );
        let p = ok(
            "NGRAM_POSITIONAL_SIMILARITY",
            vec![json!("quick fox"), json!("quirky fox"), json!(2)],
        );
        let p = p.as_f64().unwrap_or(-1.0);
        assert!(p > 0.0 && p < 1.0, "{p}");
        warns(
            "NGRAM_SIMILARITY",
            vec![json!("a"), json!("a"), json!(0)],
            10,
        );
        assert_eq!(
            ok(
                "LEVENSHTEIN_MATCH",
                vec![json!("quikc"), json!("quick"), json!(1)]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "LEVENSHTEIN_MATCH",
                vec![json!("quikc"), json!("quick"), json!(1), json!(false)]
            ),
            json!(false)
        );
        assert_eq!(
            ok(
                "LEVENSHTEIN_MATCH",
                vec![json!("quikc"), json!("quick"), json!(2), json!(false)]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "LEVENSHTEIN_MATCH",
                vec![
                    json!("prequikc"),
                    json!("quick"),
                    json!(1),
                    json!(true),
                    json!(64),
                    json!("pre")
                ]
            ),
            json!(true)
        );
        invalid(
            "LEVENSHTEIN_MATCH",
            vec![json!("a"), json!("b"), json!(5), json!(false)],
        );
        invalid(
            "LEVENSHTEIN_MATCH",
            vec![json!("a"), json!("b"), json!("1")],
        );
        invalid("NGRAM_SIMILARITY", vec![json!(1), json!("a"), json!(2)]);
    }

    #[test]
    fn case_and_trim() {
        assert_eq!(ok("LOWER", vec![json!("AVOcado")]), json!("avocado"));
        assert_eq!(ok("UPPER", vec![json!("AVOcado")]), json!("AVOCADO"));
        assert_eq!(ok("UPPER", vec![json!("äöüß")]), json!("ÄÖÜSS"));
        assert_eq!(ok("LOWER", vec![json!(null)]), json!(""));
        assert_eq!(ok("LTRIM", vec![json!("  foo bar  ")]), json!("foo bar  "));
        assert_eq!(
            ok("LTRIM", vec![json!("--==[foo-bar]==--"), json!("-=[]")]),
            json!("foo-bar]==--")
        );
        assert_eq!(ok("RTRIM", vec![json!("  foo bar  ")]), json!("  foo bar"));
        assert_eq!(
            ok("RTRIM", vec![json!("--==[foo-bar]==--"), json!("-=[]")]),
            json!("--==[foo-bar")
        );
        assert_eq!(ok("TRIM", vec![json!("  foobar\t \r\n ")]), json!("foobar"));
        assert_eq!(
            ok("TRIM", vec![json!(";foo;bar;baz, "), json!(",; ")]),
            json!("foo;bar;baz")
        );
        assert_eq!(ok("TRIM", vec![json!("  a  "), json!(1)]), json!("a  "));
        assert_eq!(ok("TRIM", vec![json!("  a  "), json!(2)]), json!("  a"));
        assert_eq!(ok("TRIM", vec![json!("  a  "), json!(7)]), json!("a"));
        assert_eq!(ok("TRIM", vec![json!("  a  "), json!(true)]), json!("a"));
        assert_eq!(ok("LTRIM", vec![json!("  a"), json!(null)]), json!("  a"));
    }

    #[test]
    fn like_function() {
        assert_eq!(ok("LIKE", vec![json!("cart"), json!("ca_t")]), json!(true));
        assert_eq!(
            ok("LIKE", vec![json!("carrot"), json!("ca_t")]),
            json!(false)
        );
        assert_eq!(
            ok("LIKE", vec![json!("carrot"), json!("ca%t")]),
            json!(true)
        );
        assert_eq!(
            ok("LIKE", vec![json!("FoO bAr BaZ"), json!("fOo%bAz")]),
            json!(false)
        );
        assert_eq!(
            ok(
                "LIKE",
                vec![json!("FoO bAr BaZ"), json!("fOo%bAz"), json!(true)]
            ),
            json!(true)
        );
    }

    #[test]
    fn regexes() {
        assert_eq!(
            ok(
                "REGEX_TEST",
                vec![json!("the quick brown fox"), json!("the.*fox")]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "REGEX_TEST",
                vec![
                    json!("the quick brown fox"),
                    json!("^(a|the)\\s+(quick|slow).*f.x$")
                ]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "REGEX_TEST",
                vec![
                    json!("the\nquick\nbrown\nfox"),
                    json!("^the(\n[a-w]+)+\nfox$")
                ]
            ),
            json!(true)
        );
        assert_eq!(
            ok("REGEX_TEST", vec![json!("ABC"), json!("b"), json!(true)]),
            json!(true)
        );
        let (v, w) = run("REGEX_TEST", vec![json!("a"), json!("(")]);
        assert_eq!((v, w), (json!(null), vec![1543]));
        assert_eq!(
            ok(
                "REGEX_MATCHES",
                vec![
                    json!("My-us3r_n4m3"),
                    json!("^[a-z0-9_-]{3,16}$"),
                    json!(true)
                ]
            ),
            json!(["My-us3r_n4m3"])
        );
        assert_eq!(
            ok(
                "REGEX_MATCHES",
                vec![
                    json!("#4d82h4"),
                    json!("^#?([a-f0-9]{6}|[a-f0-9]{3})$"),
                    json!(true)
                ]
            ),
            json!(null)
        );
        assert_eq!(
            ok(
                "REGEX_MATCHES",
                vec![
                    json!("john@doe.com"),
                    json!("^([a-z0-9_\\.-]+)@([\\da-z-]+)\\.([a-z\\.]{2,6})$"),
                    json!(false)
                ]
            ),
            json!(["john@doe.com", "john", "doe", "com"])
        );
        assert_eq!(
            ok(
                "REGEX_SPLIT",
                vec![json!("hypertext language, programming"), json!("[\\s, ]+")]
            ),
            json!(["hypertext", "language", "programming"])
        );
        assert_eq!(
            ok(
                "REGEX_SPLIT",
                vec![json!("Capture the article"), json!("(the)")]
            ),
            json!(["Capture ", "the", " article"])
        );
        assert_eq!(
            ok(
                "REGEX_SPLIT",
                vec![
                    json!("cA,Bc,A,BcA,BcA,Bc"),
                    json!("a,b"),
                    json!(true),
                    json!(3)
                ]
            ),
            json!(["c", "c,", "c"])
        );
        assert_eq!(
            ok(
                "REGEX_REPLACE",
                vec![
                    json!("the quick brown fox"),
                    json!("the.*fox"),
                    json!("jumped over")
                ]
            ),
            json!("jumped over")
        );
        assert_eq!(
            ok(
                "REGEX_REPLACE",
                vec![json!("An Avocado"), json!("a"), json!("_")]
            ),
            json!("An Avoc_do")
        );
        assert_eq!(
            ok(
                "REGEX_REPLACE",
                vec![json!("An Avocado"), json!("a"), json!("_"), json!(true)]
            ),
            json!("_n _voc_do")
        );
        assert_eq!(
            ok(
                "REGEX_SPLIT",
                vec![json!("a,b"), json!(","), json!(false), json!(0)]
            ),
            json!([])
        );
        assert_eq!(
            ok(
                "REGEX_SPLIT",
                vec![json!("a,b"), json!(","), json!(false), json!(-1)]
            ),
            json!(null)
        );
        invalid(
            "REGEX_SPLIT",
            vec![json!("a,b"), json!(","), json!(false), json!("1")],
        );
        assert_eq!(ok("REGEX_SPLIT", vec![json!(""), json!(",")]), json!([""]));
    }

    #[test]
    fn reverse_soundex_split() {
        assert_eq!(ok("REVERSE", vec![json!("foobar")]), json!("raboof"));
        assert_eq!(ok("REVERSE", vec![json!("电脑坏了")]), json!("了坏脑电"));
        assert_eq!(ok("REVERSE", vec![json!([2, 4, 6])]), json!([6, 4, 2]));
        warns("REVERSE", vec![json!(1)], 1563);
        assert_eq!(ok("SOUNDEX", vec![json!("example")]), json!("E251"));
        assert_eq!(ok("SOUNDEX", vec![json!("ekzampul")]), json!("E251"));
        assert_eq!(ok("SOUNDEX", vec![json!("soundex")]), json!("S532"));
        assert_eq!(ok("SOUNDEX", vec![json!("sounteks")]), json!("S532"));
        assert_eq!(ok("SOUNDEX", vec![json!("Ashcraft")]), json!("A226"));
        assert_eq!(ok("SOUNDEX", vec![json!("  12 Pfister")]), json!("P123"));
        assert_eq!(ok("SOUNDEX", vec![json!("")]), json!(""));
        assert_eq!(
            ok("SPLIT", vec![json!("foo-bar-baz"), json!("-")]),
            json!(["foo", "bar", "baz"])
        );
        assert_eq!(
            ok("SPLIT", vec![json!("foo-bar-baz"), json!("-"), json!(1)]),
            json!(["foo"])
        );
        assert_eq!(
            ok("SPLIT", vec![json!("foo, bar & baz"), json!([", ", " & "])]),
            json!(["foo", "bar", "baz"])
        );
        assert_eq!(ok("SPLIT", vec![json!("äb"), json!("")]), json!(["ä", "b"]));
        assert_eq!(ok("SPLIT", vec![json!("foo")]), json!(["foo"]));
        assert_eq!(ok("SPLIT", vec![json!(12)]), json!([12]));
        assert_eq!(
            ok("SPLIT", vec![json!("a-b"), json!("-"), json!(0)]),
            json!([])
        );
        assert_eq!(
            ok("SPLIT", vec![json!("a-b"), json!("-"), json!(-1)]),
            json!(null)
        );
        invalid("SPLIT", vec![json!("a-b"), json!("-"), json!("2")]);
        invalid("SPLIT", vec![json!("a-b"), json!({})]);
        assert_eq!(ok("SPLIT", vec![json!(""), json!("-")]), json!([""]));
        assert_eq!(ok("REPEAT", vec![json!("ab"), json!(3)]), json!("ababab"));
        assert_eq!(
            ok("REPEAT", vec![json!("ab"), json!(3), json!(", ")]),
            json!("ab, ab, ab")
        );
        assert_eq!(ok("REPEAT", vec![json!(1), json!(0)]), json!(""));
        invalid("REPEAT", vec![json!("ab"), json!(-1)]);
        warns("REPEAT", vec![json!("ab"), json!(100_000_000)], 32);
        assert_eq!(ok("TO_CHAR", vec![json!(65)]), json!("A"));
        assert_eq!(ok("TO_CHAR", vec![json!(128_512)]), json!("😀"));
        invalid("TO_CHAR", vec![json!(-1)]);
        invalid("TO_CHAR", vec![json!("65")]);
    }

    #[test]
    fn starts_with_and_substitute() {
        assert_eq!(
            ok("STARTS_WITH", vec![json!("foobar"), json!("foo")]),
            json!(true)
        );
        assert_eq!(
            ok("STARTS_WITH", vec![json!("foobar"), json!("baz")]),
            json!(false)
        );
        assert_eq!(
            ok("STARTS_WITH", vec![json!("foobar"), json!(["bar", "foo"])]),
            json!(true)
        );
        assert_eq!(
            ok("STARTS_WITH", vec![json!("foobar"), json!(["bar", "baz"])]),
            json!(false)
        );
        assert_eq!(
            ok(
                "STARTS_WITH",
                vec![json!("foobar"), json!(["f", "fo", "x"]), json!(2)]
            ),
            json!(true)
        );
        let q = json!("the quick brown foxx");
        assert_eq!(
            ok("SUBSTITUTE", vec![q.clone(), json!("quick"), json!("lazy")]),
            json!("the lazy brown foxx")
        );
        assert_eq!(
            ok(
                "SUBSTITUTE",
                vec![q.clone(), json!(["quick", "foxx"]), json!(["slow", "dog"])]
            ),
            json!("the slow brown dog")
        );
        assert_eq!(
            ok(
                "SUBSTITUTE",
                vec![
                    q.clone(),
                    json!(["the", "foxx"]),
                    json!(["that", "dog"]),
                    json!(1)
                ]
            ),
            json!("that quick brown foxx")
        );
        assert_eq!(
            ok(
                "SUBSTITUTE",
                vec![
                    q.clone(),
                    json!(["the", "quick", "foxx"]),
                    json!(["A", "VOID!"])
                ]
            ),
            json!("A VOID! brown ")
        );
        assert_eq!(
            ok(
                "SUBSTITUTE",
                vec![q.clone(), json!(["quick", "foxx"]), json!("xx")]
            ),
            json!("the xx brown xx")
        );
        assert_eq!(
            ok(
                "SUBSTITUTE",
                vec![
                    q.clone(),
                    json!({"quick": "small", "brown": "slow", "foxx": "ant"})
                ]
            ),
            json!("the small slow ant")
        );
        assert_eq!(
            ok(
                "SUBSTITUTE",
                vec![
                    q.clone(),
                    json!({"quick": "", "brown": null, "foxx": "ant"})
                ]
            ),
            json!("the   ant")
        );
        assert_eq!(
            ok(
                "SUBSTITUTE",
                vec![
                    q.clone(),
                    json!({"quick": "small", "brown": "slow", "foxx": "ant"}),
                    json!(2)
                ]
            ),
            json!("the small slow foxx")
        );
        assert_eq!(
            ok("SUBSTITUTE", vec![json!("äää"), json!("ä"), json!("a")]),
            json!("aaa")
        );
        assert_eq!(
            ok(
                "SUBSTITUTE",
                vec![json!("abc"), json!("b"), json!("x"), json!(0)]
            ),
            json!("abc")
        );
        assert_eq!(
            ok("SUBSTITUTE", vec![json!("abc"), json!("b")]),
            json!("ac")
        );
        invalid("SUBSTITUTE", vec![json!("abc"), json!(1), json!("x")]);
        invalid("SUBSTITUTE", vec![json!("abc"), json!({"b": 1})]);
        invalid("SUBSTITUTE", vec![json!("abc"), json!(["b"]), json!([1])]);
    }
}
