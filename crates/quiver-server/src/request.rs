//! A transport-free request: what every handler sees, whether it came from a socket, from a
//! part of a batch request, from the async job queue or from a test.

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use percent_encoding::percent_decode_str;
use quiver_errors::{Error, ErrorCode, Result};

/// The database a request addresses when its path has no `/_db/{name}` prefix.
pub const DEFAULT_DATABASE: &str = "_system";

/// One HTTP request, parsed far enough for routing.
#[derive(Clone, Debug)]
pub struct Request {
    /// The HTTP method.
    pub method: Method,
    /// The database named by the `/_db/{db}` prefix (percent-decoded), or `_system`.
    pub database: String,
    /// The path below the database prefix, as sent (still percent-encoded), e.g.
    /// `/_api/document/users/alice`. Used for `Location` headers and error messages.
    pub path: String,
    /// The percent-decoded segments of [`Request::path`], e.g. `["_api","document","users","alice"]`.
    pub segments: Vec<String>,
    /// Query parameters in order, percent-decoded (`+` is a space).
    pub query: Vec<(String, String)>,
    /// Request headers.
    pub headers: HeaderMap,
    /// The body, already de-chunked and decompressed.
    pub body: Bytes,
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
    percent_decode_str(raw)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| {
            Error::with_message(
                ErrorCode::HttpBadParameter,
                "invalid UTF-8 in percent-encoded URL",
            )
        })
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
        // Absolute-form targets (`http://host/path`) are legal HTTP; keep only the path.
        let raw_path = match raw_path.find("://") {
            Some(scheme_end) => {
                let rest = &raw_path[scheme_end + 3..];
                rest.find('/').map(|i| &rest[i..]).unwrap_or("/")
            }
            None => raw_path,
        };
        if !raw_path.starts_with('/') {
            return Err(Error::with_message(
                ErrorCode::HttpBadParameter,
                "request path must start with '/'",
            ));
        }
        let mut segments_raw: Vec<&str> = raw_path[1..].split('/').collect();
        // A trailing slash does not add an empty segment (`/_api/collection/` = `/_api/collection`).
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
        let path = path.to_string();
        let mut segments = Vec::with_capacity(segments_raw.len());
        for s in segments_raw {
            segments.push(decode_component(s, false)?);
        }
        Ok(Request {
            method,
            database,
            path,
            segments,
            query: parse_query(raw_query)?,
            headers,
            body,
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
        self
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
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The path segments after a route prefix of `n` segments.
    pub fn suffix(&self, n: usize) -> &[String] {
        self.segments.get(n..).unwrap_or(&[])
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
