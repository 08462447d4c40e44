//! CORS as ArangoDB 3.12 answers it: every response to a request with an `Origin` header
//! reflects that origin, but only origins trusted with `--http.trusted-origin` get
//! `Access-Control-Allow-Credentials: true`, so a page from anywhere else cannot read what the
//! server answers to requests its users' browsers send with their credentials. Preflights
//! (OPTIONS with `Origin`) also name the allowed methods, echo the requested headers and may
//! be cached for 1800 s.
//!
//! Authentication is not CORS's business: a cross-origin request without credentials is
//! refused (401) like any other when authentication is on.

use http::header::{self, HeaderMap, HeaderValue};

use crate::ALLOWED_METHODS;

/// The response headers a cross-origin page may read.
pub const EXPOSED_HEADERS: &str = "etag, content-encoding, content-length, location, server, x-arango-errors, x-arango-async-id, x-arango-error-codes";

/// How long a browser may cache a preflight answer, in seconds (ArangoDB's fixed value).
const PREFLIGHT_MAX_AGE: &str = "1800";

/// The origins whose cross-origin requests may carry credentials (`--http.trusted-origin`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum TrustedOrigins {
    /// No origin (the default).
    #[default]
    None,
    /// Every origin (`all` or `*`).
    All,
    /// These origins, compared exactly after dropping one trailing `/`.
    Listed(Vec<String>),
}

impl TrustedOrigins {
    /// Reads the values of `--http.trusted-origin` as ArangoDB does: `all` or `*` trusts every
    /// origin and `none` clears the list (whichever of the two comes first wins); other values
    /// are origins, a trailing `/` dropped, empty values ignored.
    pub fn parse<S: AsRef<str>>(values: &[S]) -> TrustedOrigins {
        let mut listed = Vec::new();
        for value in values {
            let value = value.as_ref().trim();
            match value {
                "all" | "*" => return TrustedOrigins::All,
                "none" => return TrustedOrigins::None,
                _ => {
                    let origin = value.strip_suffix('/').unwrap_or(value);
                    if !origin.is_empty() {
                        listed.push(origin.to_string());
                    }
                }
            }
        }
        if listed.is_empty() {
            TrustedOrigins::None
        } else {
            TrustedOrigins::Listed(listed)
        }
    }

    /// Whether requests from `origin` (an `Origin` header value) may carry credentials.
    pub fn allows_credentials(&self, origin: &str) -> bool {
        let origin = origin.strip_suffix('/').unwrap_or(origin);
        match self {
            TrustedOrigins::None => false,
            TrustedOrigins::All => !origin.is_empty(),
            TrustedOrigins::Listed(origins) => origins.iter().any(|o| o == origin),
        }
    }
}

/// What the transport remembers of a request's CORS headers until its response is ready.
#[derive(Clone, Debug)]
pub struct CorsRequest {
    origin: HeaderValue,
    /// `Some` for a preflight (OPTIONS with `Origin`): its `Access-Control-Request-Headers`.
    preflight: Option<Option<HeaderValue>>,
}

impl CorsRequest {
    /// The CORS part of a request: `None` without an `Origin` header (not cross-origin).
    pub fn from_headers(is_options: bool, headers: &HeaderMap) -> Option<CorsRequest> {
        let origin = headers.get(header::ORIGIN)?.clone();
        let preflight =
            is_options.then(|| headers.get(header::ACCESS_CONTROL_REQUEST_HEADERS).cloned());
        Some(CorsRequest { origin, preflight })
    }

    /// A request whose body or head could not be read: answered without preflight headers.
    pub fn without_preflight(self) -> CorsRequest {
        CorsRequest {
            preflight: None,
            ..self
        }
    }

    /// Adds the CORS headers to the response headers.
    pub fn add_headers(&self, headers: &mut HeaderMap, trusted: &TrustedOrigins) {
        let credentials = self
            .origin
            .to_str()
            .is_ok_and(|origin| trusted.allows_credentials(origin));
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, self.origin.clone());
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            HeaderValue::from_static(if credentials { "true" } else { "false" }),
        );
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSED_HEADERS),
        );
        let Some(requested_headers) = &self.preflight else {
            return;
        };
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static(ALLOWED_METHODS),
        );
        let requested = requested_headers
            .as_ref()
            .and_then(|h| h.to_str().ok())
            .map(str::trim)
            .unwrap_or("");
        if !requested.is_empty() {
            if let Ok(value) = HeaderValue::from_str(requested) {
                headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, value);
            }
        }
        headers.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static(PREFLIGHT_MAX_AGE),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(options: bool, origin: &str, requested: Option<&str>) -> CorsRequest {
        let mut headers = HeaderMap::new();
        headers.insert(header::ORIGIN, HeaderValue::from_str(origin).unwrap());
        if let Some(r) = requested {
            headers.insert(
                header::ACCESS_CONTROL_REQUEST_HEADERS,
                HeaderValue::from_str(r).unwrap(),
            );
        }
        CorsRequest::from_headers(options, &headers).unwrap()
    }

    fn answer(cors: &CorsRequest, trusted: &TrustedOrigins) -> HeaderMap {
        let mut headers = HeaderMap::new();
        cors.add_headers(&mut headers, trusted);
        headers
    }

    #[test]
    fn trusted_origin_values_parse_as_arangodb() {
        let cases: &[(&[&str], TrustedOrigins)] = &[
            (&[], TrustedOrigins::None),
            (&["none"], TrustedOrigins::None),
            (&["all"], TrustedOrigins::All),
            (&["*"], TrustedOrigins::All),
            (&["http://a.test", "all"], TrustedOrigins::All),
            (&["none", "all"], TrustedOrigins::None),
            (&["", " "], TrustedOrigins::None),
            (
                &["http://a.test/", " https://b.test:8443 "],
                TrustedOrigins::Listed(vec!["http://a.test".into(), "https://b.test:8443".into()]),
            ),
        ];
        for (values, expected) in cases {
            assert_eq!(&TrustedOrigins::parse(values), expected, "{values:?}");
        }
    }

    #[test]
    fn only_trusted_origins_get_credentials() {
        let trusted = TrustedOrigins::parse(&["http://app.test"]);
        assert!(trusted.allows_credentials("http://app.test"));
        assert!(trusted.allows_credentials("http://app.test/"));
        assert!(!trusted.allows_credentials("http://evil.test"));
        assert!(!trusted.allows_credentials("http://app.test.evil.test"));
        assert!(!trusted.allows_credentials("https://app.test"));
        assert!(!TrustedOrigins::None.allows_credentials("http://app.test"));
        assert!(TrustedOrigins::All.allows_credentials("http://any.test"));

        let plain = answer(&request(false, "http://evil.test", None), &trusted);
        assert_eq!(
            plain[header::ACCESS_CONTROL_ALLOW_ORIGIN],
            "http://evil.test"
        );
        assert_eq!(plain[header::ACCESS_CONTROL_ALLOW_CREDENTIALS], "false");
        assert_eq!(
            plain[header::ACCESS_CONTROL_EXPOSE_HEADERS],
            EXPOSED_HEADERS
        );
        assert!(plain.get(header::ACCESS_CONTROL_ALLOW_METHODS).is_none());

        let good = answer(&request(false, "http://app.test", None), &trusted);
        assert_eq!(good[header::ACCESS_CONTROL_ALLOW_CREDENTIALS], "true");
    }

    #[test]
    fn preflights_name_methods_headers_and_max_age() {
        let trusted = TrustedOrigins::All;
        let headers = answer(
            &request(true, "http://a.test", Some(" x-a, x-b ")),
            &trusted,
        );
        assert_eq!(
            headers[header::ACCESS_CONTROL_ALLOW_METHODS],
            ALLOWED_METHODS
        );
        assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_HEADERS], "x-a, x-b");
        assert_eq!(headers[header::ACCESS_CONTROL_MAX_AGE], "1800");
        assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_CREDENTIALS], "true");

        let bare = answer(&request(true, "http://a.test", None), &trusted);
        assert!(bare.get(header::ACCESS_CONTROL_ALLOW_HEADERS).is_none());
        let unread = answer(
            &request(true, "http://a.test", Some("x-a")).without_preflight(),
            &trusted,
        );
        assert!(unread.get(header::ACCESS_CONTROL_MAX_AGE).is_none());
        assert!(CorsRequest::from_headers(true, &HeaderMap::new()).is_none());
    }
}
