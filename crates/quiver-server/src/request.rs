//! A transport-free request: what every handler sees, whether it came from a socket, from a
//! part of a batch request, from the async job queue or from a test.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use percent_encoding::percent_decode_str;
use quiver_aql::handoff::Handoff;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;
use smallvec::SmallVec;

/// The database a request addresses when its path has no `/_db/{name}` prefix.
pub const DEFAULT_DATABASE: &str = "_system";

/// `x-arango-async`: run the request as an async job.
pub static X_ARANGO_ASYNC: HeaderName = HeaderName::from_static("x-arango-async");
/// `x-arango-trx-id`: run the request inside a stream transaction.
pub static X_ARANGO_TRX_ID: HeaderName = HeaderName::from_static("x-arango-trx-id");

/// Path segments after a route prefix, borrowed from the request ([`Request::suffix`]). Inline
/// up to eight, which covers every route of the API, so routing allocates nothing.
pub type PathParts<'a> = SmallVec<[&'a str; 8]>;

/// The percent-decoded segments of a request path, e.g. `_api`, `document`, `users`, `alice`.
///
/// Kept as one string plus the segments' bounds rather than a `String` per segment: building
/// a request is on every read and insert, and the per-segment allocations were most of its
/// cost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Segments {
    text: String,
    /// Byte ranges in `text`; `u32` keeps the request small (it is moved several times per
    /// request) and a request target is far below 4 GiB (the body limit bounds batch parts).
    bounds: SmallVec<[(u32, u32); 8]>,
}

impl Segments {
    /// Splits and decodes a path without its leading slash (`_api/document/c/k`).
    fn decode(path: &str) -> Result<Segments> {
        let too_long =
            || Error::with_message(ErrorCode::HttpUriTooLong, "request path is too long");
        let len = u32::try_from(path.len()).map_err(|_| too_long())?;
        let mut out = Segments {
            text: String::with_capacity(path.len()),
            bounds: SmallVec::new(),
        };
        // Nearly every path has nothing to decode: then the text is the path itself and one
        // pass over its bytes finds the bounds.
        if !path.as_bytes().contains(&b'%') {
            out.text.push_str(path);
            let mut start = 0;
            for (i, b) in (0..len).zip(path.bytes()) {
                if b == b'/' {
                    out.bounds.push((start, i));
                    start = i + 1;
                }
            }
            out.bounds.push((start, len));
            return Ok(out);
        }
        for segment in path.split('/') {
            let start = out.bounds.last().map_or(0, |&(_, end)| end);
            if segment.contains('%') {
                out.text.push_str(&decode_percent(segment)?);
            } else {
                out.text.push_str(segment);
            }
            // Decoding only shrinks the text.
            let end = u32::try_from(out.text.len()).map_err(|_| too_long())?;
            out.bounds.push((start, end));
        }
        Ok(out)
    }

    /// How many segments there are.
    pub fn len(&self) -> usize {
        self.bounds.len()
    }

    /// Whether the path has no segments (`/`).
    pub fn is_empty(&self) -> bool {
        self.bounds.is_empty()
    }

    /// The segment at `index`.
    pub fn get(&self, index: usize) -> Option<&str> {
        self.bounds
            .get(index)
            .map(|&(s, e)| &self.text[s as usize..e as usize])
    }

    /// The first segment.
    pub fn first(&self) -> Option<&str> {
        self.get(0)
    }

    /// Every segment in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.bounds
            .iter()
            .map(|&(s, e)| &self.text[s as usize..e as usize])
    }
}

impl std::ops::Index<usize> for Segments {
    type Output = str;

    fn index(&self, index: usize) -> &str {
        let (s, e) = self.bounds[index];
        &self.text[s as usize..e as usize]
    }
}

impl<const N: usize> PartialEq<[&str; N]> for Segments {
    fn eq(&self, other: &[&str; N]) -> bool {
        self.len() == N && self.iter().zip(other).all(|(a, b)| a == *b)
    }
}

/// One HTTP request, parsed far enough for routing.
#[derive(Clone, Debug)]
pub struct Request {
    /// The HTTP method.
    pub method: Method,
    /// The database named by the `/_db/{db}` prefix (percent-decoded), or `_system`
    /// (borrowed, so the common case allocates nothing).
    pub database: Cow<'static, str>,
    /// The path below the database prefix, as sent (still percent-encoded), e.g.
    /// `/_api/document/users/alice`. Used for `Location` headers and error messages.
    pub path: String,
    /// The percent-decoded segments of [`Request::path`], e.g. `["_api","document","users","alice"]`.
    pub segments: Segments,
    /// Query parameters in order, percent-decoded (`+` is a space).
    pub query: Vec<(String, String)>,
    /// Request headers.
    pub headers: HeaderMap,
    /// The body, already de-chunked and decompressed.
    pub body: Bytes,
    /// Who the request runs as: `None` until the dispatcher authenticated it
    /// ([`crate::access::admit`]); batch parts and queued jobs carry their outer request's.
    pub identity: Option<crate::auth::Identity>,
    /// The client's address, when the request came from a socket (for the login throttle).
    pub peer: Option<std::net::IpAddr>,
    /// When the transport finished reading it (for the queue-time statistics; taken by the
    /// dispatcher, so a request is timed once).
    pub received: Option<std::time::Instant>,
    /// Set by the transport when it runs the request on its HTTP worker because the query is
    /// expected to be brief: what frees the worker should it not be (an AQL query hands it to
    /// the query service, `quiver_aql::handoff`).
    pub handoff: Option<Arc<Handoff>>,
    /// The body as JSON, parsed on the first [`Request::body_json`].
    parsed_body: OnceLock<Option<Value>>,
}

fn invalid_utf8() -> Error {
    Error::with_message(
        ErrorCode::HttpBadParameter,
        "invalid UTF-8 in percent-encoded URL",
    )
}

/// Percent-decodes `raw`; invalid UTF-8 after decoding is a bad request.
fn decode_percent(raw: &str) -> Result<Cow<'_, str>> {
    percent_decode_str(raw)
        .decode_utf8()
        .map_err(|_| invalid_utf8())
}

/// Decodes one URL component; invalid UTF-8 after decoding is a bad request.
fn decode_component(raw: &str, plus_is_space: bool) -> Result<String> {
    // Nearly every component (`_api`, `document`, collection names, `waitForSync=true`) has
    // nothing to decode; copying it directly skips the decoder's second UTF-8 validation,
    // which showed up per part in batch-API profiles.
    if !raw.as_bytes().iter().any(|&b| b == b'%' || b == b'+') {
        return Ok(raw.to_owned());
    }
    let replaced;
    let raw = if plus_is_space && raw.contains('+') {
        replaced = raw.replace('+', " ");
        replaced.as_str()
    } else {
        raw
    };
    decode_percent(raw).map(Cow::into_owned)
}

/// Parses a query string (`a=1&b=x%20y`) into decoded pairs. A key without `=` gets an empty
/// value, as ArangoDB does.
pub fn parse_query(raw: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for pair in raw.split('&') {
        if pair.is_empty() {
            continue;
        }
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        out.push((decode_component(k, true)?, decode_component(v, true)?));
    }
    Ok(out)
}

impl Request {
    /// Builds a request from a method, a request target (`/_db/x/_api/...?a=b`), headers and
    /// body. Fails with 400 on a target that is not an absolute path or not valid UTF-8 once
    /// decoded.
    pub fn new(method: Method, target: &str, headers: HeaderMap, body: Bytes) -> Result<Request> {
        let (raw_path, raw_query) = target.split_once('?').unwrap_or((target, ""));
        // Absolute-form targets (`http://host/path`) are legal HTTP; keep only the path. An
        // origin-form target (the usual `/path`) is never one, and skips the substring search.
        let raw_path = if raw_path.starts_with('/') {
            raw_path
        } else if let Some(scheme_end) = raw_path.find("://") {
            let rest = &raw_path[scheme_end + 3..];
            rest.find('/').map(|i| &rest[i..]).unwrap_or("/")
        } else {
            raw_path
        };
        let Some(mut path) = raw_path.strip_prefix('/') else {
            return Err(Error::with_message(
                ErrorCode::HttpBadParameter,
                "request path must start with '/'",
            ));
        };
        let mut database = Cow::Borrowed(DEFAULT_DATABASE);
        // `/_db/` alone is no prefix: it routes (to a 404) as the path it is.
        if let Some(after) = path.strip_prefix("_db/").filter(|a| !a.is_empty()) {
            let (name, rest) = after.split_once('/').unwrap_or((after, ""));
            database = Cow::Owned(decode_component(name, false)?);
            path = rest;
        }
        // A trailing slash does not add an empty segment (`/_api/collection/` = `/_api/collection`).
        let segments = if path.is_empty() {
            Segments::default()
        } else {
            Segments::decode(path.strip_suffix('/').unwrap_or(path))?
        };
        let mut owned_path = String::with_capacity(path.len() + 1);
        owned_path.push('/');
        owned_path.push_str(path);
        Ok(Request {
            method,
            database,
            path: owned_path,
            segments,
            query: parse_query(raw_query)?,
            headers,
            body,
            identity: None,
            peer: None,
            received: None,
            handoff: None,
            parsed_body: OnceLock::new(),
        })
    }

    /// A request for tests and internal callers: `Request::build(Method::GET, "/_api/version")`.
    pub fn build(method: Method, target: &str) -> Request {
        Request::new(method, target, HeaderMap::new(), Bytes::new())
            .unwrap_or_else(|_| panic!("invalid test target {target}"))
    }

    /// Replaces the body (builder style, for tests).
    #[must_use]
    pub fn with_body(mut self, body: impl Into<Bytes>) -> Request {
        self.body = body.into();
        self.parsed_body = OnceLock::new();
        self
    }

    /// The body as strict JSON (`None`: empty or only whitespace), parsed once however often it
    /// is asked for (the cursor path reads it to decide where the query runs and again to run
    /// it). A body that fails to parse is parsed, and fails, again on the next call.
    pub fn body_json(&self) -> Result<Option<&Value>> {
        if let Some(parsed) = self.parsed_body.get() {
            return Ok(parsed.as_ref());
        }
        let parsed = crate::json::parse_body(&self.body)?;
        Ok(self.parsed_body.get_or_init(|| parsed).as_ref())
    }

    /// Adds a header (builder style, for tests). Invalid names or values are skipped.
    #[must_use]
    pub fn with_header(mut self, name: &str, value: &str) -> Request {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            self.headers.append(n, v);
        }
        self
    }

    /// The first value of a query parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A boolean query parameter as ArangoDB parses it: `true`, `yes`, `on`, `y`, `1`
    /// (case-insensitive, trimmed) are true, anything else false; absent (or arangojs'
    /// literal `undefined`) gives `default`.
    pub fn bool_param(&self, name: &str, default: bool) -> bool {
        match self.param(name) {
            None => default,
            Some(v) if v.trim() == "undefined" => default,
            Some(v) => parse_bool(v),
        }
    }

    /// A boolean query parameter that is `None` when absent.
    pub fn opt_bool_param(&self, name: &str) -> Option<bool> {
        match self.param(name) {
            None => None,
            Some(v) if v.trim() == "undefined" => None,
            Some(v) => Some(parse_bool(v)),
        }
    }

    /// A header value as text (first occurrence, `None` if absent or not visible ASCII).
    /// `name` is a `&str` or, cheaper on hot paths (no parsing of the name), a `HeaderName`.
    pub fn header<K: http::header::AsHeaderName>(&self, name: K) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The path segments after a route prefix of `n` segments.
    pub fn suffix(&self, n: usize) -> PathParts<'_> {
        self.segments.iter().skip(n).collect()
    }
}

/// ArangoDB's boolean parsing of query-string values.
pub fn parse_bool(value: &str) -> bool {
    let v = value.trim();
    v.eq_ignore_ascii_case("true")
        || v.eq_ignore_ascii_case("yes")
        || v.eq_ignore_ascii_case("on")
        || v.eq_ignore_ascii_case("y")
        || v == "1"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_prefix_is_split_and_decoded() {
        let r = Request::build(
            Method::GET,
            "/_db/m%C3%B6t%C3%B6r/_api/document/c%20x/k?x=1",
        );
        assert_eq!(r.database, "mötör");
        assert_eq!(r.path, "/_api/document/c%20x/k");
        assert_eq!(r.segments, ["_api", "document", "c x", "k"]);
        assert_eq!(r.param("x"), Some("1"));
    }

    #[test]
    fn default_database_and_trailing_slash() {
        let r = Request::build(Method::GET, "/_api/collection/");
        assert_eq!(r.database, "_system");
        assert_eq!(r.segments, ["_api", "collection"]);
        let r = Request::build(Method::GET, "/_db/foo");
        assert_eq!(r.database, "foo");
        assert!(r.segments.is_empty());
        assert_eq!(r.path, "/");
        let r = Request::build(Method::GET, "/_db/foo/");
        assert_eq!(r.database, "foo");
        assert_eq!(r.path, "/");
    }

    #[test]
    fn booleans_follow_arangodb() {
        for t in ["true", "TRUE", " yes ", "on", "y", "1"] {
            assert!(parse_bool(t), "{t}");
        }
        for f in ["false", "0", "no", "", "2", "undefined"] {
            assert!(!parse_bool(f), "{f}");
        }
        let r = Request::build(Method::GET, "/x?a=undefined&b=0&c");
        assert!(r.bool_param("a", true));
        assert!(!r.bool_param("b", true));
        assert!(!r.bool_param("c", true));
        assert!(r.bool_param("d", true));
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_targets_never_panic(target in "\\PC{0,60}") {
            let _ = Request::new(Method::GET, &target, HeaderMap::new(), Bytes::new());
            let _ = Request::new(Method::GET, &format!("/_db/{target}"), HeaderMap::new(), Bytes::new());
        }
    }

    /// The path splitting of sessions 1-3 (a `String` per segment), kept as the oracle that
    /// the one-buffer [`Segments`] must agree with.
    fn reference_split(raw_path: &str) -> Result<(String, String, Vec<String>)> {
        let mut segments_raw: Vec<&str> = raw_path[1..].split('/').collect();
        if segments_raw.last() == Some(&"") {
            segments_raw.pop();
        }
        let mut database = DEFAULT_DATABASE.to_string();
        let mut path = raw_path;
        if segments_raw.first() == Some(&"_db") && segments_raw.len() >= 2 {
            database = decode_component(segments_raw[1], false)?;
            segments_raw.drain(..2);
            let after_prefix = &raw_path[5..];
            path = after_prefix
                .find('/')
                .map(|i| &after_prefix[i..])
                .unwrap_or("/");
        }
        let mut segments = Vec::new();
        for s in segments_raw {
            segments.push(decode_component(s, false)?);
        }
        Ok((database, path.to_string(), segments))
    }

    proptest::proptest! {
        #[test]
        fn segments_split_as_before(
            parts in proptest::collection::vec(
                proptest::sample::select(vec!["/", "_db", "_db/", "a", "%41", "%FF", "+", "%2F", "x y", "ö"]),
                0..8,
            )
        ) {
            let target = format!("/{}", parts.concat());
            let new = Request::new(Method::GET, &target, HeaderMap::new(), Bytes::new());
            match (reference_split(&target), new) {
                (Ok((database, path, segments)), Ok(r)) => {
                    proptest::prop_assert_eq!(&*r.database, database.as_str());
                    proptest::prop_assert_eq!(r.path, path);
                    proptest::prop_assert_eq!(r.segments.iter().collect::<Vec<_>>(), segments);
                }
                (Err(_), Err(_)) => {}
                (old, new) => proptest::prop_assert!(false, "{target}: {old:?} vs {new:?}"),
            }
        }
    }

    #[test]
    fn absolute_form_targets_keep_only_the_path() {
        let r = Request::build(Method::GET, "http://localhost:8529/_db/x/_api/version?a=1");
        assert_eq!(r.database, "x");
        assert_eq!(r.segments, ["_api", "version"]);
        assert_eq!(r.param("a"), Some("1"));
        assert_eq!(Request::build(Method::GET, "http://host").path, "/");
        // In an origin-form target `://` is just text of a segment.
        let r = Request::build(Method::GET, "/_api/x/a://b");
        assert_eq!(r.segments, ["_api", "x", "a:", "", "b"]);
    }

    #[test]
    fn suffix_and_segment_access() {
        let r = Request::build(Method::GET, "/_api/document/c%2Fx/k");
        assert_eq!(r.segments.len(), 4);
        assert_eq!(&r.segments[2], "c/x");
        assert_eq!(r.segments.get(4), None);
        assert_eq!(r.suffix(2).as_slice(), ["c/x", "k"]);
        assert!(r.suffix(5).is_empty());
        assert!(Request::build(Method::GET, "/").segments.is_empty());
    }

    #[test]
    fn plain_components_take_the_copy_path_and_plus_stays_in_paths() {
        let r = Request::build(Method::GET, "/_api/document/a+b/plain_key?collection=c1");
        assert_eq!(r.segments, ["_api", "document", "a+b", "plain_key"]);
        assert_eq!(r.param("collection"), Some("c1"));
        assert_eq!(decode_component("x%41y", false).unwrap(), "xAy");
        assert_eq!(decode_component("x+y", true).unwrap(), "x y");
        assert_eq!(decode_component("x+y", false).unwrap(), "x+y");
    }

    #[test]
    fn query_decoding() {
        let q = parse_query("a=x+y&b=%2F&c=&&d").unwrap();
        assert_eq!(
            q,
            vec![
                ("a".into(), "x y".into()),
                ("b".into(), "/".into()),
                ("c".into(), "".into()),
                ("d".into(), "".into())
            ]
        );
        assert!(parse_query("a=%FF").is_err());
        assert!(Request::new(Method::GET, "noslash", HeaderMap::new(), Bytes::new()).is_err());
    }
}
