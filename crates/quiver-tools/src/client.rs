//! A blocking HTTP client for one ArangoDB-compatible server: endpoint parsing (ArangoDB's
//! `tcp://` and `ssl://`, optionally `http+`-prefixed, and `http://`), TLS for `ssl://`
//! endpoints ([`crate::tls`]), Basic authentication or a bearer token (JWT), ArangoDB error
//! envelopes turned into [`Error`]s. One client per worker thread; requests never run on a
//! shared connection.

use std::sync::Arc;
use std::time::Duration;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

/// How to reach and authenticate against the server.
#[derive(Clone, Debug)]
pub struct Connection {
    /// `http://host:port` or `https://host:port`, derived from `--server.endpoint`.
    pub base_url: String,
    /// The endpoint as given (for messages).
    pub endpoint: String,
    /// The TLS settings of an `ssl://` endpoint.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// The value of the `Authorization` header, if any.
    pub authorization: Option<String>,
    /// Per-request timeout.
    pub request_timeout: Duration,
}

/// An endpoint in ArangoDB's syntax: the base URL to send requests to and whether it is an
/// `ssl://` endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// `http://host:port` or `https://host:port`.
    pub base_url: String,
    /// Whether requests go through TLS.
    pub tls: bool,
}

/// Parses ArangoDB's endpoint syntax: `tcp://host:port` and `ssl://host:port`, each also with
/// an `http+` (or `http@`) prefix, the scheme in any case; `http://host:port` is taken as
/// `tcp://`. `https://` is not an ArangoDB endpoint (its tools refuse it too): the message
/// names `ssl://`. Unix sockets are not supported.
pub fn parse_endpoint(endpoint: &str) -> Result<Endpoint> {
    let endpoint = endpoint.trim().trim_end_matches('/');
    let invalid = |why: &str| {
        Error::with_message(
            ErrorCode::BadParameter,
            format!("invalid endpoint '{endpoint}': {why}"),
        )
    };
    let Some((scheme, rest)) = endpoint.split_once("://") else {
        return Err(invalid("expected tcp://host:port or ssl://host:port"));
    };
    let scheme = scheme.to_ascii_lowercase();
    let scheme = scheme
        .strip_prefix("http+")
        .or_else(|| scheme.strip_prefix("http@"))
        .unwrap_or(&scheme);
    let tls = match scheme {
        "tcp" | "http" => false,
        "ssl" => true,
        "https" => {
            return Err(invalid(
                "https:// is not an endpoint scheme; use ssl://host:port for a TLS endpoint",
            ))
        }
        "unix" => {
            return Err(Error::with_message(
                ErrorCode::NotImplemented,
                format!(
                "endpoint '{endpoint}': unix domain sockets are not supported by the data tools"
            ),
            ))
        }
        _ => return Err(invalid("expected tcp://host:port or ssl://host:port")),
    };
    if rest.is_empty() {
        return Err(invalid("host missing"));
    }
    let base_url = format!("{}://{rest}", if tls { "https" } else { "http" });
    Ok(Endpoint { base_url, tls })
}

impl Connection {
    /// A connection with Basic authentication of `username`/`password`, or `jwt` as a bearer
    /// token when given, or none when `authentication` is off; TLS with `--ssl.protocol`
    /// `ssl_protocol` for an `ssl://` endpoint.
    pub fn new(
        endpoint: &str,
        authentication: bool,
        username: &str,
        password: &str,
        jwt: Option<&str>,
        request_timeout: Duration,
        ssl_protocol: u64,
    ) -> Result<Connection> {
        use base64::Engine as _;
        let authorization = match (authentication, jwt) {
            (false, _) => None,
            (true, Some(token)) => Some(format!("bearer {token}")),
            (true, None) => Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"))
            )),
        };
        let parsed = parse_endpoint(endpoint)?;
        let tls = if parsed.tls {
            Some(crate::tls::client_config(ssl_protocol)?)
        } else {
            None
        };
        Ok(Connection {
            base_url: parsed.base_url,
            endpoint: endpoint.trim().to_string(),
            tls,
            authorization,
            request_timeout,
        })
    }

    /// A client for one thread.
    pub fn client(&self) -> Client {
        let mut builder = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(10))
            .timeout(self.request_timeout);
        if let Some(tls) = &self.tls {
            builder = builder.tls_config(tls.clone());
        }
        Client {
            agent: builder.build(),
            connection: self.clone(),
        }
    }

    /// Whether a failed exchange looks like TLS spoken to a plain endpoint or plain HTTP
    /// spoken to a TLS one: a TLS error anywhere in the error's causes, or (for a plain
    /// endpoint) a connection the server dropped or answered with something that is no HTTP.
    /// A connection refused or a name that does not resolve is not such a case.
    fn tls_mismatch_likely(&self, error: &ureq::Transport) -> bool {
        let mut cause: Option<&(dyn std::error::Error + 'static)> =
            std::error::Error::source(error);
        while let Some(e) = cause {
            let tls_error = e.downcast_ref::<rustls::Error>().is_some()
                || e.downcast_ref::<std::io::Error>()
                    .and_then(|io| io.get_ref())
                    .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some());
            if tls_error {
                return true;
            }
            cause = e.source();
        }
        matches!(
            error.kind(),
            ureq::ErrorKind::Io | ureq::ErrorKind::BadStatus | ureq::ErrorKind::BadHeader
        )
    }

    /// What a failure to exchange a request with the server most likely means, for the
    /// message: a TLS handshake that failed, or a TLS server spoken to in plain HTTP.
    fn transport_hint(&self) -> String {
        if self.tls.is_some() {
            format!(
                "; the TLS connection to {} failed: is it an ssl:// endpoint of the server?",
                self.endpoint
            )
        } else {
            format!(
                "; if the server's endpoint is an ssl:// endpoint, connect with \
                 --server.endpoint ssl://… instead of {}",
                self.endpoint
            )
        }
    }
}

/// A response: status, the headers the tools look at, and the body.
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Response headers (lower-case names).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Reply {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (error 4 when it is not).
    pub fn json(&self) -> Result<Value> {
        serde_json::from_slice(&self.body).map_err(|e| {
            Error::with_message(
                ErrorCode::Internal,
                format!("got malformed JSON response from server: {e}"),
            )
        })
    }
}

/// Most bytes reserved for a response body before reading it.
const MAX_RESERVED_BODY: usize = 128 * 1024 * 1024;

/// A client bound to one server.
pub struct Client {
    agent: ureq::Agent,
    connection: Connection,
}

/// Percent-encodes a path segment or query value.
pub fn encode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string()
}

impl Client {
    /// `method` on `path` (which starts with `/`) of database `db` (`None`: no `/_db/`
    /// prefix). Statuses of 400 and above become the server's error (its `errorNum` and
    /// `errorMessage` when the body is ArangoDB's envelope).
    pub fn request(
        &self,
        method: &str,
        db: Option<&str>,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<Reply> {
        self.request_into(method, db, path, body, Vec::new())
    }

    /// [`Client::request`] reading the response body into `buffer` (cleared first): a
    /// caller fetching many large bodies hands back one it is done with, whose memory is
    /// already paged in.
    pub fn request_into(
        &self,
        method: &str,
        db: Option<&str>,
        path: &str,
        body: Option<&[u8]>,
        mut buffer: Vec<u8>,
    ) -> Result<Reply> {
        let url = match db {
            Some(db) => format!("{}/_db/{}{path}", self.connection.base_url, encode(db)),
            None => format!("{}{path}", self.connection.base_url),
        };
        let mut request = self.agent.request(method, &url);
        if let Some(auth) = &self.connection.authorization {
            request = request.set("Authorization", auth);
        }
        let result = match body {
            Some(bytes) => request.send_bytes(bytes),
            None => request.call(),
        };
        let response = match result {
            Ok(response) => response,
            Err(ureq::Error::Status(_, response)) => response,
            Err(ureq::Error::Transport(t)) => {
                let hint = if self.connection.tls_mismatch_likely(&t) {
                    self.connection.transport_hint()
                } else {
                    String::new()
                };
                return Err(Error::with_message(
                    ErrorCode::IoError,
                    format!("cannot reach {url}: {t}{hint}"),
                ));
            }
        };
        let status = response.status();
        let headers = response
            .headers_names()
            .into_iter()
            .filter_map(|name| {
                let value = response.header(&name)?.to_string();
                Some((name.to_ascii_lowercase(), value))
            })
            .collect();
        // Sized up front from Content-Length (dump chunks run to tens of MiB), bounded so
        // that a wrong header cannot reserve much more than a chunk.
        let expected = response
            .header("content-length")
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        buffer.clear();
        buffer.reserve(expected.min(MAX_RESERVED_BODY));
        let mut bytes = buffer;
        std::io::Read::read_to_end(&mut response.into_reader(), &mut bytes).map_err(|e| {
            Error::with_message(
                ErrorCode::IoError,
                format!("reading the response of {url}: {e}"),
            )
        })?;
        let reply = Reply {
            status,
            headers,
            body: bytes,
        };
        if status >= 400 {
            return Err(server_error(&reply, method, path));
        }
        Ok(reply)
    }

    /// A request with a JSON body whose answer is JSON.
    pub fn json(&self, method: &str, db: Option<&str>, path: &str, body: &Value) -> Result<Value> {
        let bytes = serde_json::to_vec(body).map_err(|e| {
            Error::with_message(
                ErrorCode::Internal,
                format!("cannot serialize request: {e}"),
            )
        })?;
        self.request(method, db, path, Some(&bytes))?.json()
    }
}

fn server_error(reply: &Reply, method: &str, path: &str) -> Error {
    let envelope = reply.json().ok();
    let number = envelope
        .as_ref()
        .and_then(|v| v.get("errorNum"))
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok());
    let message = envelope
        .as_ref()
        .and_then(|v| v.get("errorMessage"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("HTTP {}", reply.status));
    let code = number
        .and_then(ErrorCode::from_number)
        .unwrap_or(ErrorCode::Internal);
    Error::with_message(code, format!("{method} {path}: {message}")).with_status(reply.status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_map_to_base_urls() {
        let plain = |url: &str| Endpoint {
            base_url: url.to_string(),
            tls: false,
        };
        let tls = |url: &str| Endpoint {
            base_url: url.to_string(),
            tls: true,
        };
        let ok = |e: &str| parse_endpoint(e).unwrap();
        assert_eq!(ok("tcp://127.0.0.1:8529"), plain("http://127.0.0.1:8529"));
        assert_eq!(ok("http+tcp://h:1/"), plain("http://h:1"));
        assert_eq!(ok("http://[::1]:8529"), plain("http://[::1]:8529"));
        assert_eq!(ok("ssl://127.0.0.1:8530"), tls("https://127.0.0.1:8530"));
        assert_eq!(ok("http+ssl://h:1"), tls("https://h:1"));
        assert_eq!(ok("HTTP@SSL://h:1"), tls("https://h:1"));
        let err = parse_endpoint("https://h:1").unwrap_err();
        assert_eq!(err.code, ErrorCode::BadParameter);
        assert!(err.message.contains("ssl://"), "{}", err.message);
        assert_eq!(
            parse_endpoint("unix:///tmp/s").unwrap_err().code,
            ErrorCode::NotImplemented
        );
        for bad in ["h:1", "tcp://", "ssl://", "ftp://h:1"] {
            assert_eq!(
                parse_endpoint(bad).unwrap_err().code,
                ErrorCode::BadParameter,
                "{bad}"
            );
        }
    }

    #[test]
    fn ssl_endpoints_carry_tls_settings() {
        let timeout = Duration::from_secs(1);
        let c = Connection::new("ssl://h:1", true, "root", "", None, timeout, 5).unwrap();
        assert!(c.tls.is_some());
        assert_eq!(c.base_url, "https://h:1");
        let c = Connection::new("tcp://h:1", true, "root", "", None, timeout, 5).unwrap();
        assert!(c.tls.is_none());
        let err = Connection::new("ssl://h:1", true, "root", "", None, timeout, 1).unwrap_err();
        assert_eq!(err.code, ErrorCode::NotImplemented);
    }

    #[test]
    fn basic_authentication_header() {
        let timeout = Duration::from_secs(1);
        let c = Connection::new("tcp://h:1", true, "root", "", None, timeout, 5).unwrap();
        assert_eq!(c.authorization.as_deref(), Some("Basic cm9vdDo="));
        let c = Connection::new("tcp://h:1", false, "root", "", None, timeout, 5).unwrap();
        assert_eq!(c.authorization, None);
    }
}
