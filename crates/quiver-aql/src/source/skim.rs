//! Top-level attribute skimmer: extracts a few top-level attributes from the raw JSON bytes of
//! a stored document without building the rest.
//!
//! This is the hot path of every projected collection scan (rule
//! `reduce-extraction-to-projection`, e.g. the seed's `COLLECT age = x.AGE` over 1.6 million
//! 60-attribute profiles), which is why it is hand-written instead of going through a serde
//! visitor: skipping a value here is a byte loop without UTF-8 validation, number parsing or
//! string unescaping, only the wanted values are handed to serde_json, and with
//! [`Duplicates::Impossible`] the skim stops as soon as every wanted attribute was found.
//!
//! Skipped values are checked only for structure (balanced brackets, terminated strings),
//! not for full JSON validity: the input is a body the engine stored, which the core
//! serialized from a parsed document. Malformed structure is an error, never a panic.

use serde_json::{Map, Value};

/// What the caller knows about duplicate top-level keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Duplicates {
    /// The object has no duplicate keys (stored bodies: the core serializes them from a map),
    /// so the skim may stop once every wanted attribute was seen.
    Impossible,
    /// Duplicates may occur; the last occurrence wins, as in serde_json's `Value` (and its
    /// map keeps the position of the first occurrence). The whole object is walked.
    LastWins,
}

/// Why a body could not be skimmed.
#[derive(Debug, PartialEq, Eq)]
pub struct SkimError(pub &'static str);

/// The wanted top-level attributes of the JSON object `body`, in document order; attributes
/// the object lacks are absent from the result. Values are decoded by serde_json, so they are
/// exactly what parsing the whole document would have produced.
pub fn skim(
    body: &[u8],
    wanted: &[String],
    duplicates: Duplicates,
) -> Result<Map<String, Value>, SkimError> {
    let mut out = Map::with_capacity(wanted.len());
    let mut p = Parser { b: body, i: 0 };
    p.ws();
    p.expect(b'{', "a document must be an object")?;
    p.ws();
    if p.peek() == Some(b'}') {
        return Ok(out);
    }
    loop {
        p.ws();
        let (ks, ke, escaped) = p.string()?;
        p.ws();
        p.expect(b':', "expected ':' after an attribute name")?;
        p.ws();
        let vs = p.i;
        let matched = match_key(&body[ks..ke], escaped, wanted)?;
        p.skip_value()?;
        if let Some(name) = matched {
            let v: Value = serde_json::from_slice(&body[vs..p.i])
                .map_err(|_| SkimError("malformed attribute value"))?;
            out.insert(name.clone(), v);
            if duplicates == Duplicates::Impossible && out.len() == wanted.len() {
                return Ok(out);
            }
        }
        p.ws();
        match p.next() {
            Some(b',') => continue,
            Some(b'}') => return Ok(out),
            _ => return Err(SkimError("expected ',' or '}' in the object")),
        }
    }
}

/// The raw JSON text of top-level attribute `name` of the object `body`, `None` if the object
/// lacks it. Stops at the first occurrence, so it is only for bodies without duplicate keys
/// (stored bodies). Used by the count-per-value fast path, which groups by the raw text and
/// decodes each distinct text once instead of building a value per document.
pub fn raw_attribute<'b>(body: &'b [u8], name: &str) -> Result<Option<&'b [u8]>, SkimError> {
    let wanted = std::slice::from_ref(&name);
    let mut p = Parser { b: body, i: 0 };
    p.ws();
    p.expect(b'{', "a document must be an object")?;
    p.ws();
    if p.peek() == Some(b'}') {
        return Ok(None);
    }
    loop {
        p.ws();
        let (ks, ke, escaped) = p.string()?;
        p.ws();
        p.expect(b':', "expected ':' after an attribute name")?;
        p.ws();
        let vs = p.i;
        let matched = match_key(&body[ks..ke], escaped, wanted)?.is_some();
        p.skip_value()?;
        if matched {
            return Ok(Some(&body[vs..p.i]));
        }
        p.ws();
        match p.next() {
            Some(b',') => continue,
            Some(b'}') => return Ok(None),
            _ => return Err(SkimError("expected ',' or '}' in the object")),
        }
    }
}

/// Finds one top-level attribute in many bodies without walking the attributes before it.
///
/// A stored body is compact JSON the core serialized, so the attribute's key appears as the
/// bytes `"NAME":`. The finder searches for them (SIMD, [`memchr::memmem`]) and accepts the
/// first occurrence whose quote is real — not escaped, i.e. preceded by an even run of
/// backslashes; a real quote followed by `NAME":` opens an object key, since a string's
/// content cannot hold an unescaped quote — when no `{` or `[` byte lies between the body's
/// opening brace and it (then no nested container was open, so the key is the top-level
/// object's; any earlier top-level occurrence would have been found first). Every other case —
/// a bracket before the candidate (even one inside a string), whitespace around the colon, an
/// escaped key, an absent attribute — falls back to [`raw_attribute`]'s full walk, so the
/// answer is always [`raw_attribute`]'s on well-formed JSON. Unlike the walk, the search does
/// not check the structure of the attributes it jumps over (stored bodies are well-formed).
pub struct AttributeFinder {
    name: String,
    needle: memchr::memmem::Finder<'static>,
}

impl AttributeFinder {
    pub fn new(name: &str) -> AttributeFinder {
        let quoted = serde_json::to_string(name).expect("a string serializes");
        AttributeFinder {
            name: name.to_string(),
            needle: memchr::memmem::Finder::new(format!("{quoted}:").as_bytes()).into_owned(),
        }
    }

    /// The raw JSON text of the attribute in `body`, as [`raw_attribute`] gives it.
    pub fn raw<'b>(&self, body: &'b [u8]) -> Result<Option<&'b [u8]>, SkimError> {
        match self.jump(body) {
            Some(found) => found.map(Some),
            None => raw_attribute(body, &self.name),
        }
    }

    /// The value after the first real candidate key if no container opens before it; `None`
    /// when only the full walk can answer.
    fn jump<'b>(&self, body: &'b [u8]) -> Option<Result<&'b [u8], SkimError>> {
        let mut p = Parser { b: body, i: 0 };
        p.ws();
        if p.next() != Some(b'{') {
            return None;
        }
        let open = p.i;
        let mut from = open;
        let at = loop {
            let at = from + self.needle.find(&body[from..])?;
            let backslashes = body[open..at]
                .iter()
                .rev()
                .take_while(|&&c| c == b'\\')
                .count();
            if backslashes % 2 == 0 {
                break at;
            }
            from = at + 1;
        };
        if memchr::memchr2(b'{', b'[', &body[open..at]).is_some() {
            return None;
        }
        p.i = at + self.needle.needle().len();
        p.ws();
        let start = p.i;
        Some(p.skip_value().map(|()| &body[start..p.i]))
    }
}

/// The wanted name equal to the raw key bytes (between the quotes), if any.
fn match_key<'w, W: AsRef<str>>(
    raw: &[u8],
    escaped: bool,
    wanted: &'w [W],
) -> Result<Option<&'w W>, SkimError> {
    if !escaped {
        return Ok(wanted.iter().find(|w| w.as_ref().as_bytes() == raw));
    }
    // Rare: an escaped key is decoded (with its quotes) by serde_json to compare.
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    let key: String =
        serde_json::from_slice(&quoted).map_err(|_| SkimError("malformed attribute name"))?;
    Ok(wanted.iter().find(|w| w.as_ref() == key))
}

/// Position of the first `"` or `\\` in `s`. Hand-written, eight bytes at a time (SWAR):
/// document strings are mostly short (attribute names, codes, dates), where the set-up of a
/// SIMD search (memchr) cost more than the search itself in the scan profile.
fn quote_or_backslash(s: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // Flags the zero bytes of `v`; the lowest flag is always exact (higher ones may be
    // spurious after a borrow, which does not matter for the first match).
    let zeros = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let mut i = 0;
    while let Some(chunk) = s.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let hits = zeros(w ^ (ONES * b'"' as u64)) | zeros(w ^ (ONES * b'\\' as u64));
        if hits != 0 {
            return Some(i + (hits.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    s[i..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\')
        .map(|k| i + k)
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn expect(&mut self, c: u8, why: &'static str) -> Result<(), SkimError> {
        if self.next() == Some(c) {
            Ok(())
        } else {
            Err(SkimError(why))
        }
    }

    /// A string at the cursor: (start, end) of its contents without quotes, and whether it
    /// contains escapes. The cursor ends after the closing quote.
    fn string(&mut self) -> Result<(usize, usize, bool), SkimError> {
        self.expect(b'"', "expected a string")?;
        let start = self.i;
        let mut escaped = false;
        loop {
            let rest = &self.b[self.i..];
            let Some(k) = quote_or_backslash(rest) else {
                return Err(SkimError("unterminated string"));
            };
            self.i += k;
            if self.b[self.i] == b'"' {
                let end = self.i;
                self.i += 1;
                return Ok((start, end, escaped));
            }
            escaped = true;
            // A backslash escapes exactly the next byte (`\uXXXX`'s hex digits need no care).
            self.i += 2;
            if self.i > self.b.len() {
                return Err(SkimError("unterminated string"));
            }
        }
    }

    /// Moves past one value. Nesting is tracked with a counter (no recursion), so deep input
    /// cannot exhaust the stack.
    fn skip_value(&mut self) -> Result<(), SkimError> {
        let mut depth = 0usize;
        loop {
            self.ws();
            match self.peek() {
                None => return Err(SkimError("unexpected end of the document")),
                Some(b'"') => {
                    self.string()?;
                }
                Some(b'{' | b'[') => {
                    depth += 1;
                    self.i += 1;
                    continue;
                }
                Some(b'}' | b']') => {
                    if depth == 0 {
                        return Err(SkimError("unexpected closing bracket"));
                    }
                    depth -= 1;
                    self.i += 1;
                }
                Some(b',' | b':') => {
                    if depth == 0 {
                        return Err(SkimError("missing value"));
                    }
                    self.i += 1;
                    continue;
                }
                Some(_) => {
                    // Number or literal: up to the next delimiter.
                    let start = self.i;
                    while let Some(c) = self.peek() {
                        if matches!(c, b',' | b'}' | b']' | b':' | b' ' | b'\t' | b'\n' | b'\r') {
                            break;
                        }
                        self.i += 1;
                    }
                    if self.i == start {
                        return Err(SkimError("malformed value"));
                    }
                }
            }
            if depth == 0 {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    /// What parsing the whole document and picking the attributes gives.
    fn reference(body: &str, wanted: &[String]) -> Map<String, Value> {
        let doc: Map<String, Value> = serde_json::from_str(body).expect("valid test input");
        doc.into_iter()
            .filter(|(k, _)| wanted.contains(k))
            .collect()
    }

    fn check(body: &str, wanted: &[&str]) {
        let wanted = names(wanted);
        let want = reference(body, &wanted);
        for mode in [Duplicates::Impossible, Duplicates::LastWins] {
            let got = skim(body.as_bytes(), &wanted, mode).expect("skims");
            assert_eq!(
                Value::Object(got),
                Value::Object(want.clone()),
                "{body} {mode:?}"
            );
        }
    }

    #[test]
    fn picks_top_level_attributes_of_every_shape() {
        let body = r#"{"_key":"P1","_rev":"_x","n":{"AGE":1,"a":[1,{"b":"}"}]},"s":"a\"b\\c}{","u":"\u00e9\ud83d\ude00 ü","arr":[[],[{}],"]"],"AGE":26,"f":-1.5e3,"t":true,"z":null}"#;
        check(body, &["AGE"]);
        check(body, &["n", "s", "u"]);
        check(body, &["arr", "f", "t", "z", "_key"]);
        check(body, &["missing"]);
        check(body, &[]);
    }

    proptest! {
        #[test]
        fn quote_search_agrees_with_a_plain_search(s in proptest::collection::vec(
            prop_oneof![Just(b'"'), Just(b'\\'), Just(b'a'), Just(0u8), Just(0xffu8), any::<u8>()],
            0..40,
        )) {
            let want = s.iter().position(|&c| c == b'"' || c == b'\\');
            prop_assert_eq!(quote_or_backslash(&s), want);
        }
    }

    #[test]
    fn raw_attribute_gives_the_value_text() {
        let body = br#"{"a":{"AGE":1},"s":"x\"}","AGE" : 26 ,"z":null,"l":[1,{"b":2}]}"#;
        let raw = |name| raw_attribute(body, name).unwrap();
        assert_eq!(raw("AGE"), Some(&b"26"[..]));
        assert_eq!(raw("a"), Some(&br#"{"AGE":1}"#[..]));
        assert_eq!(raw("s"), Some(&br#""x\"}""#[..]));
        assert_eq!(raw("z"), Some(&b"null"[..]));
        assert_eq!(raw("l"), Some(&br#"[1,{"b":2}]"#[..]));
        assert_eq!(raw("b"), None);
        assert_eq!(raw("missing"), None);
        assert_eq!(
            raw_attribute(br#"{"A\u0047E":7}"#, "AGE").unwrap(),
            Some(&b"7"[..])
        );
        assert_eq!(raw_attribute(b" { } ", "AGE").unwrap(), None);
        assert!(raw_attribute(b"[1]", "AGE").is_err());
        assert!(raw_attribute(br#"{"AGE":"#, "AGE").is_err());
        assert!(raw_attribute(br#"{"x":1"#, "AGE").is_err());
    }

    #[test]
    fn finder_jumps_only_to_real_top_level_keys() {
        let find = |body: &str, name: &str| {
            let got = AttributeFinder::new(name).raw(body.as_bytes()).unwrap();
            assert_eq!(got, raw_attribute(body.as_bytes(), name).unwrap(), "{body}");
            got.map(|v| String::from_utf8(v.to_vec()).unwrap())
        };
        let some = |s: &str| Some(s.to_string());
        assert_eq!(find(r#"{"a":"x","AGE":26,"b":1}"#, "AGE"), some("26"));
        assert_eq!(find(r#" {"AGE": null }"#, "AGE"), some("null"));
        // Inside a string: the quote before the name is escaped.
        assert_eq!(find(r#"{"s":"\"AGE\":1","AGE":2}"#, "AGE"), some("2"));
        // An escaped backslash before a real quote.
        assert_eq!(find(r#"{"s":"x\\","AGE":3}"#, "AGE"), some("3"));
        // Nested first: the bracket before the candidate sends it to the full walk.
        assert_eq!(find(r#"{"n":{"AGE":1},"AGE":4}"#, "AGE"), some("4"));
        assert_eq!(find(r#"{"n":[{"AGE":1}]}"#, "AGE"), None);
        assert_eq!(find(r#"{"s":"[","AGE":5}"#, "AGE"), some("5"));
        // Forms the search does not see: whitespace, escapes, absence.
        assert_eq!(find(r#"{"AGE" : 6}"#, "AGE"), some("6"));
        assert_eq!(find(r#"{"A\u0047E":7}"#, "AGE"), some("7"));
        assert_eq!(find(r#"{"AGEX":8}"#, "AGE"), None);
        assert_eq!(
            find(r#"{"x":{"a":[1,"b"]},"AGE":{"c":[9]}}"#, "AGE"),
            some(r#"{"c":[9]}"#)
        );
        // Names that need escaping are searched in their serialized form.
        assert_eq!(find(r#"{"a\"b":10}"#, "a\"b"), some("10"));
        assert!(AttributeFinder::new("a").raw(br#"{"a":"#).is_err());
        assert!(AttributeFinder::new("a").raw(b"[1]").is_err());
    }

    proptest! {
        #[test]
        fn finder_agrees_with_the_full_walk((body, wanted, unique) in object_text()) {
            // Stored bodies have no duplicate keys; the finder is only for them.
            prop_assume!(unique);
            for name in &wanted {
                let want = raw_attribute(body.as_bytes(), name).unwrap();
                prop_assert_eq!(AttributeFinder::new(name).raw(body.as_bytes()).unwrap(), want);
            }
        }

        #[test]
        fn finder_never_panics_on_arbitrary_bytes(body in prop::collection::vec(any::<u8>(), 0..64), w in "[a-c]{1,2}") {
            let _ = AttributeFinder::new(&w).raw(&body);
        }
    }

    #[test]
    fn whitespace_and_empty_objects() {
        check(" { } ", &["a"]);
        check("{ \"a\" : [ 1 , 2 ] ,\n\t\"b\" : { } }", &["a", "b"]);
    }

    #[test]
    fn escaped_keys_are_decoded_before_comparing() {
        check(r#"{"A\u0047E":7,"x\"y":1}"#, &["AGE", "x\"y"]);
        check(r#"{"\u00fcber":2}"#, &["über"]);
    }

    #[test]
    fn nested_wanted_names_are_not_top_level() {
        let got = skim(
            br#"{"a":{"AGE":1},"b":2}"#,
            &names(&["AGE"]),
            Duplicates::LastWins,
        );
        assert_eq!(got, Ok(Map::new()));
    }

    #[test]
    fn duplicates_last_wins_like_serde_json() {
        let body = r#"{"a":1,"b":2,"a":3}"#;
        let got = skim(body.as_bytes(), &names(&["a"]), Duplicates::LastWins).unwrap();
        assert_eq!(Value::Object(got), json!({"a": 3}));
        let both = skim(body.as_bytes(), &names(&["a", "b"]), Duplicates::LastWins).unwrap();
        assert_eq!(
            Value::Object(both),
            Value::Object(reference(body, &names(&["a", "b"])))
        );
        // Stored bodies never have duplicates; there the first occurrence ends the skim.
        let early = skim(body.as_bytes(), &names(&["a"]), Duplicates::Impossible).unwrap();
        assert_eq!(Value::Object(early), json!({"a": 1}));
    }

    #[test]
    fn stops_early_without_reading_the_rest() {
        // The tail is broken, but the wanted attribute comes first.
        let body = br#"{"AGE":3,"x":[1,2"#;
        let got = skim(body, &names(&["AGE"]), Duplicates::Impossible).unwrap();
        assert_eq!(Value::Object(got), json!({"AGE": 3}));
        assert!(skim(body, &names(&["AGE"]), Duplicates::LastWins).is_err());
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        for bad in [
            "",
            "[]",
            "{",
            "{\"a\"",
            "{\"a\":",
            "{\"a\":1",
            "{\"a\" 1}",
            "{\"a\":1,}",
            "{\"a\":]}",
            "{\"a\":[1}",
            "{\"a\":\"x",
            "{\"a\":\"x\\",
            "{a:1}",
            "{\"a\":1 \"b\":2}",
            "{\"a\":,}",
        ] {
            assert!(
                skim(bad.as_bytes(), &names(&["a", "b"]), Duplicates::LastWins).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn deep_nesting_does_not_recurse() {
        let body = format!(
            "{{\"a\":{}1{},\"b\":2}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let got = skim(body.as_bytes(), &names(&["b"]), Duplicates::Impossible).unwrap();
        assert_eq!(Value::Object(got), json!({"b": 2}));
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            "\\PC{0,8}".prop_map(Value::String),
            "[\"\\\\/\u{0}-\u{1f}a-z{}\\[\\]:,é😀]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec(("[a-c\"\\\\é]{0,3}", inner), 0..5)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// A top-level object as text, possibly with duplicate keys and odd whitespace.
    fn object_text() -> impl Strategy<Value = (String, Vec<String>, bool)> {
        let key = prop_oneof!["[a-d]{1,2}", "[a\"\\\\é😀\u{1}]{0,3}"];
        (
            prop::collection::vec((key.clone(), json_value(), 0..3usize), 0..8),
            prop::collection::vec(key, 0..4),
        )
            .prop_map(|(entries, wanted)| {
                let ws = ["", " ", "\n\t "];
                let mut s = String::from("{");
                for (i, (k, v, w)) in entries.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    s.push_str(ws[*w]);
                    s.push_str(&serde_json::to_string(k).unwrap());
                    s.push_str(ws[*w]);
                    s.push(':');
                    s.push_str(ws[*w]);
                    s.push_str(&serde_json::to_string(v).unwrap());
                }
                s.push('}');
                let mut wanted = wanted;
                wanted.sort();
                wanted.dedup();
                let mut keys: Vec<&String> = entries.iter().map(|(k, _, _)| k).collect();
                keys.sort();
                keys.dedup();
                let unique = keys.len() == entries.len();
                (s, wanted, unique)
            })
    }

    proptest! {
        #[test]
        fn agrees_with_serde_json((body, wanted, unique) in object_text()) {
            let want = reference(&body, &wanted);
            let got = skim(body.as_bytes(), &wanted, Duplicates::LastWins).unwrap();
            prop_assert_eq!(Value::Object(got), Value::Object(want.clone()));
            // Without duplicate keys the early-stopping mode must agree as well.
            if unique {
                let got = skim(body.as_bytes(), &wanted, Duplicates::Impossible).unwrap();
                prop_assert_eq!(Value::Object(got), Value::Object(want));
            }
        }

        #[test]
        fn never_panics_on_arbitrary_bytes(body in prop::collection::vec(any::<u8>(), 0..64), w in "[a-c]{1,2}") {
            let _ = skim(&body, &[w], Duplicates::LastWins);
        }
    }
}
