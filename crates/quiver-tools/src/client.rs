//! A blocking HTTP client for one ArangoDB-compatible server: endpoint parsing
//! (`tcp://`, `http://`), Basic authentication or a bearer token (JWT), ArangoDB error
//! envelopes turned into [`Error`]s. One client per worker thread; requests never run on a
//! shared connection.

use std::time::Duration;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

/// How to reach and authenticate against the server.
#[derive(Clone, Debug)]
pub struct Connection {
    /// `http://host:port`, derived from `--server.endpoint`.
    pub base_url: String,
    /// The value of the `Authorization` header, if any.
    pub authorization: Option<String>,
    /// Per-request timeout.
    pub request_timeout: Duration,
}

/// Turns arangosh's endpoint syntax into a base URL. `ssl://` endpoints are refused: the
/// tools speak plain HTTP only.
pub fn base_url(endpoint: &str) -> Result<String> {
    let endpoint = endpoint.trim().trim_end_matches('/');
    let rest = if let Some(rest) = endpoint
        .strip_prefix("tcp://")
        .or_else(|| endpoint.strip_prefix("http+tcp://"))
        .or_else(|| endpoint.strip_prefix("http://"))
    {
        rest
    } else if endpoint.starts_with("ssl://") || endpoint.starts_with("https://") {
        return Err(Error::with_message(
            ErrorCode::NotImplemented,
            format!("endpoint '{endpoint}': TLS endpoints are not supported by the data tools"),
        ));
    } else {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            format!("invalid endpoint '{endpoint}': expected tcp://host:port"),
        ));
    };
    if rest.is_empty() {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            format!("invalid endpoint '{endpoint}': host missing"),
        ));
    }
    Ok(format!("http://{rest}"))
}

impl Connection {
    /// A connection with Basic authentication of `username`/`password`, or `jwt` as a bearer
    /// token when given, or none when `authentication` is off.
    pub fn new(
        endpoint: &str,
        authentication: bool,
        username: &str,
        password: &str,
        jwt: Option<&str>,
        request_timeout: Duration,
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
        Ok(Connection {
            base_url: base_url(endpoint)?,
            authorization,
            request_timeout,
        })
    }

    /// A client for one thread.
    pub fn client(&self) -> Client {
        Client {
            agent: ureq::AgentBuilder::new()
                .timeout_connect(Duration::from_secs(10))
                .timeout(self.request_timeout)
                .build(),
            connection: self.clone(),
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
                return Err(Error::with_message(
                    ErrorCode::IoError,
                    format!("cannot reach {url}: {t}"),
                ))
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
        let mut bytes = Vec::new();
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
        assert_eq!(
            base_url("tcp://127.0.0.1:8529").unwrap(),
            "http://127.0.0.1:8529"
        );
        assert_eq!(base_url("http+tcp://h:1/").unwrap(), "http://h:1");
        assert_eq!(base_url("http://[::1]:8529").unwrap(), "http://[::1]:8529");
        assert_eq!(
            base_url("ssl://h:1").unwrap_err().code,
            ErrorCode::NotImplemented
        );
        assert_eq!(base_url("h:1").unwrap_err().code, ErrorCode::BadParameter);
        assert_eq!(
            base_url("tcp://").unwrap_err().code,
            ErrorCode::BadParameter
        );
    }

    #[test]
    fn basic_authentication_header() {
        let c =
            Connection::new("tcp://h:1", true, "root", "", None, Duration::from_secs(1)).unwrap();
        assert_eq!(c.authorization.as_deref(), Some("Basic cm9vdDo="));
        let c =
            Connection::new("tcp://h:1", false, "root", "", None, Duration::from_secs(1)).unwrap();
        assert_eq!(c.authorization, None);
    }
}
