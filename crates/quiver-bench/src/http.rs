//! A small HTTP/1.1 client over one tokio `TcpStream`.
//!
//! Hand-written on purpose: a load generator must cost less per request than the server it
//! measures. hyper's client (even `hyper::client::conn`) builds `http::Request`/`HeaderMap`
//! values, runs a dispatcher task per connection and hands every response through a channel;
//! here one task owns one socket, the request is written from a reused byte buffer in a single
//! `write`, and the response is parsed in place with `httparse`, reading only the headers the
//! benchmark needs. With one request in flight per connection (arangobench's model) that is
//! all HTTP/1.1 needs: status line, headers, and a body delimited by Content-Length, chunked
//! encoding or connection close.

use std::io::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use quiver_errors::{Error, ErrorCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::options::Config;

/// Largest response accepted; bounds memory when a server misbehaves.
pub const MAX_RESPONSE_BYTES: usize = 1 << 30;
const MAX_HEADERS: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        }
    }
}

/// A parsed response. Only the headers the benchmark looks at are kept.
#[derive(Debug, Clone, Default)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
    /// `x-arango-errors`: failed parts of a batch response.
    pub arango_errors: Option<u64>,
    /// `content-type`, kept for multipart batch responses.
    pub content_type: Option<String>,
    /// The server announced it closes the connection.
    pub close: bool,
}

impl Response {
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }
    pub fn body_text(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        if text.len() > 500 {
            let mut end = 500;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}...", &text[..end])
        } else {
            text.into_owned()
        }
    }
}

/// How the body of a response is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(usize),
    Chunked,
    UntilClose,
}

/// Result of trying to parse a complete response out of `buf`.
#[derive(Debug)]
pub enum Parsed {
    /// More bytes are needed.
    Partial,
    /// A response and the number of bytes it used.
    Complete(Response, usize),
}

/// Parses one response from `buf`. `eof` says the peer closed the connection, which completes a
/// body delimited by connection close. `head_request` responses have no body.
pub fn parse_response(buf: &[u8], eof: bool) -> Result<Parsed, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Response::new(&mut headers);
    let head_len = match parsed.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            return if eof {
                Err("connection closed before a complete response header".into())
            } else {
                Ok(Parsed::Partial)
            }
        }
        Err(e) => return Err(format!("malformed response header: {e}")),
    };
    let status = parsed.code.unwrap_or(0);
    let mut response = Response {
        status,
        ..Response::default()
    };
    let mut framing = Framing::UntilClose;
    for header in parsed.headers.iter() {
        let name = header.name;
        if name.eq_ignore_ascii_case("content-length") {
            let text = std::str::from_utf8(header.value).map_err(|_| "bad content-length")?;
            let length: usize = text
                .trim()
                .parse()
                .map_err(|_| format!("bad content-length '{text}'"))?;
            if framing != Framing::Chunked {
                framing = Framing::Length(length);
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if header
                .value
                .windows(7)
                .any(|w| w.eq_ignore_ascii_case(b"chunked"))
            {
                framing = Framing::Chunked;
            }
        } else if name.eq_ignore_ascii_case("connection") {
            response.close = header
                .value
                .windows(5)
                .any(|w| w.eq_ignore_ascii_case(b"close"));
        } else if name.eq_ignore_ascii_case("x-arango-errors") {
            response.arango_errors = std::str::from_utf8(header.value)
                .ok()
                .and_then(|s| s.trim().parse().ok());
        } else if name.eq_ignore_ascii_case("content-type")
            && header.value.len() >= 9
            && header.value[..9].eq_ignore_ascii_case(b"multipart")
        {
            // Only batch responses need it; skipping the others saves an allocation.
            response.content_type = Some(String::from_utf8_lossy(header.value).into_owned());
        }
    }
    if status == 204 || status == 304 || (100..200).contains(&status) {
        framing = Framing::Length(0);
    }
    let rest = &buf[head_len..];
    match framing {
        Framing::Length(length) => {
            if length > MAX_RESPONSE_BYTES {
                return Err(format!("response body of {length} bytes is too large"));
            }
            if rest.len() < length {
                if eof {
                    return Err("connection closed in the middle of a response body".into());
                }
                return Ok(Parsed::Partial);
            }
            response.body = rest[..length].to_vec();
            Ok(Parsed::Complete(response, head_len + length))
        }
        Framing::UntilClose => {
            if !eof {
                return Ok(Parsed::Partial);
            }
            response.body = rest.to_vec();
            response.close = true;
            Ok(Parsed::Complete(response, buf.len()))
        }
        Framing::Chunked => match decode_chunked(rest)? {
            None if eof => Err("connection closed in the middle of a chunked body".into()),
            None => Ok(Parsed::Partial),
            Some((body, used)) => {
                response.body = body;
                Ok(Parsed::Complete(response, head_len + used))
            }
        },
    }
}

/// Decodes a chunked body; `None` if it is not complete yet.
fn decode_chunked(mut data: &[u8]) -> Result<Option<(Vec<u8>, usize)>, String> {
    let total = data.len();
    let mut body = Vec::new();
    loop {
        let Some(line_end) = find(data, b"\r\n") else {
            return Ok(None);
        };
        let line = std::str::from_utf8(&data[..line_end]).map_err(|_| "bad chunk header")?;
        let size_text = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("bad chunk size '{size_text}'"))?;
        if body.len().saturating_add(size) > MAX_RESPONSE_BYTES {
            return Err("chunked response body is too large".into());
        }
        data = &data[line_end + 2..];
        if size == 0 {
            // Trailers end with an empty line.
            loop {
                let Some(end) = find(data, b"\r\n") else {
                    return Ok(None);
                };
                let empty = end == 0;
                data = &data[end + 2..];
                if empty {
                    return Ok(Some((body, total - data.len())));
                }
            }
        }
        if data.len() < size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&data[..size]);
        if &data[size..size + 2] != b"\r\n" {
            return Err("chunk not terminated by CRLF".into());
        }
        data = &data[size + 2..];
    }
}

pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Percent-encodes a path segment (database names may contain non-ASCII characters).
pub fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn base64(input: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(input)
}

/// The `Authorization` header value of HTTP Basic authentication for `username`/`password`
/// (arangobench's `--server.username` and `--server.password`).
pub fn basic_authorization(username: &str, password: &str) -> String {
    format!(
        "Basic {}",
        base64(format!("{username}:{password}").as_bytes())
    )
}

/// Connection settings shared by every client of a run.
#[derive(Clone, Debug)]
pub struct ClientSettings {
    pub addrs: Vec<SocketAddr>,
    pub host_header: String,
    pub authorization: Option<String>,
    pub keep_alive: bool,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
}

impl ClientSettings {
    pub fn from_config(config: &Config) -> Result<ClientSettings, Error> {
        use std::net::ToSocketAddrs;
        let addrs: Vec<SocketAddr> = (config.endpoint.host.as_str(), config.endpoint.port)
            .to_socket_addrs()
            .map_err(|e| {
                Error::with_message(
                    ErrorCode::SimpleClientCouldNotConnect,
                    format!("cannot resolve '{}': {e}", config.endpoint.host),
                )
            })?
            .collect();
        if addrs.is_empty() {
            return Err(Error::with_message(
                ErrorCode::SimpleClientCouldNotConnect,
                format!("'{}' resolves to no address", config.endpoint.host),
            ));
        }
        let authorization = config
            .authentication
            .then(|| basic_authorization(&config.username, &config.password));
        Ok(ClientSettings {
            addrs,
            host_header: config.endpoint.host_header(),
            authorization,
            keep_alive: config.keep_alive,
            connect_timeout: config.connection_timeout,
            request_timeout: config.request_timeout,
        })
    }
}

/// One connection to the server (reconnected when needed).
pub struct HttpClient {
    settings: ClientSettings,
    db_prefix: String,
    stream: Option<TcpStream>,
    out: Vec<u8>,
    inbuf: Vec<u8>,
    /// Connections opened so far (for the report: keep-alive should keep this at 1).
    pub connects: u64,
    /// Retry once on a fresh connection when a reused one turns out to be closed by the
    /// server. Only for control requests: a load connection reports the failure instead,
    /// because a retried write could be applied twice.
    pub retry_stale: bool,
}

impl HttpClient {
    pub fn new(settings: ClientSettings, database: &str) -> HttpClient {
        HttpClient {
            settings,
            db_prefix: format!("/_db/{}", encode_segment(database)),
            stream: None,
            out: Vec::with_capacity(4096),
            inbuf: Vec::with_capacity(16 * 1024),
            connects: 0,
            retry_stale: false,
        }
    }

    pub fn set_database(&mut self, database: &str) {
        self.db_prefix = format!("/_db/{}", encode_segment(database));
    }

    /// Opens the TCP connection now rather than on the first request (no-op when open), so
    /// a caller can keep connection set-up out of what it times.
    pub async fn open(&mut self) -> Result<(), Error> {
        if self.stream.is_none() {
            self.connect().await?;
        }
        Ok(())
    }

    async fn connect(&mut self) -> Result<(), Error> {
        let mut last = None;
        for addr in &self.settings.addrs {
            match tokio::time::timeout(self.settings.connect_timeout, TcpStream::connect(addr))
                .await
            {
                Ok(Ok(stream)) => {
                    // Requests are written in one piece; Nagle would only delay them.
                    let _ = stream.set_nodelay(true);
                    self.stream = Some(stream);
                    self.connects += 1;
                    return Ok(());
                }
                Ok(Err(e)) => last = Some(format!("{addr}: {e}")),
                Err(_) => last = Some(format!("{addr}: connection timeout")),
            }
        }
        Err(Error::with_message(
            ErrorCode::SimpleClientCouldNotConnect,
            format!("could not connect to server: {}", last.unwrap_or_default()),
        ))
    }

    /// Sends one request to `<db prefix><path>` and reads the response.
    pub async fn request(
        &mut self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: &[u8],
        async_header: bool,
    ) -> Result<Response, Error> {
        self.out.clear();
        let out = &mut self.out;
        out.extend_from_slice(method.as_str().as_bytes());
        out.push(b' ');
        out.extend_from_slice(self.db_prefix.as_bytes());
        out.extend_from_slice(path.as_bytes());
        out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        out.extend_from_slice(self.settings.host_header.as_bytes());
        out.extend_from_slice(if self.settings.keep_alive {
            b"\r\nConnection: Keep-Alive\r\n".as_slice()
        } else {
            b"\r\nConnection: Close\r\n".as_slice()
        });
        if let Some(auth) = &self.settings.authorization {
            out.extend_from_slice(b"Authorization: ");
            out.extend_from_slice(auth.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        if async_header {
            out.extend_from_slice(b"x-arango-async: true\r\n");
        }
        if !body.is_empty() || matches!(method, Method::Post | Method::Put | Method::Patch) {
            out.extend_from_slice(b"Content-Type: ");
            out.extend_from_slice(content_type.unwrap_or("application/json").as_bytes());
            out.extend_from_slice(b"\r\nContent-Length: ");
            let _ = write!(out, "{}", body.len());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(body);

        let timeout = self.settings.request_timeout;
        let reused = self.stream.is_some();
        let mut outcome = tokio::time::timeout(timeout, self.exchange()).await;
        if reused && self.retry_stale && matches!(outcome, Ok(Err(_))) {
            self.stream = None;
            outcome = tokio::time::timeout(timeout, self.exchange()).await;
        }
        match outcome {
            Ok(Ok(response)) => {
                if response.close || !self.settings.keep_alive {
                    self.stream = None;
                }
                Ok(response)
            }
            Ok(Err(e)) => {
                self.stream = None;
                Err(e)
            }
            Err(_) => {
                self.stream = None;
                Err(Error::with_message(
                    ErrorCode::SimpleClientCouldNotRead,
                    format!("no response within {} s", timeout.as_secs_f64()),
                ))
            }
        }
    }

    async fn exchange(&mut self) -> Result<Response, Error> {
        if self.stream.is_none() {
            self.connect().await?;
        }
        let Some(stream) = self.stream.as_mut() else {
            return Err(Error::new(ErrorCode::SimpleClientCouldNotConnect));
        };
        stream.write_all(&self.out).await.map_err(|e| {
            Error::with_message(
                ErrorCode::SimpleClientCouldNotWrite,
                format!("could not write to server: {e}"),
            )
        })?;
        self.inbuf.clear();
        let mut eof = false;
        loop {
            if !self.inbuf.is_empty() || eof {
                match parse_response(&self.inbuf, eof) {
                    Ok(Parsed::Complete(response, _used)) => return Ok(response),
                    Ok(Parsed::Partial) => {}
                    Err(message) => {
                        return Err(Error::with_message(
                            ErrorCode::SimpleClientCouldNotRead,
                            message,
                        ))
                    }
                }
            }
            if self.inbuf.len() > MAX_RESPONSE_BYTES {
                return Err(Error::with_message(
                    ErrorCode::SimpleClientCouldNotRead,
                    "response too large",
                ));
            }
            self.inbuf.reserve(16 * 1024);
            let n = stream.read_buf(&mut self.inbuf).await.map_err(|e| {
                Error::with_message(
                    ErrorCode::SimpleClientCouldNotRead,
                    format!("could not read from server: {e}"),
                )
            })?;
            if n == 0 {
                if self.inbuf.is_empty() {
                    return Err(Error::with_message(
                        ErrorCode::SimpleClientCouldNotRead,
                        "server closed the connection without a response",
                    ));
                }
                eof = true;
            }
        }
    }

    /// GET convenience for control requests.
    pub async fn get(&mut self, path: &str) -> Result<Response, Error> {
        self.request(Method::Get, path, None, b"", false).await
    }

    /// JSON request convenience for control requests.
    pub async fn send_json(
        &mut self,
        method: Method,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<Response, Error> {
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        self.request(method, path, None, &bytes, false).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(buf: &[u8]) -> (Response, usize) {
        match parse_response(buf, false).unwrap() {
            Parsed::Complete(r, n) => (r, n),
            Parsed::Partial => panic!("partial"),
        }
    }

    #[test]
    fn content_length_response() {
        let raw = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 11\r\nx-arango-errors: 2\r\n\r\n{\"ok\":true}EXTRA";
        let (r, used) = complete(raw);
        assert_eq!(r.status, 201);
        assert_eq!(r.body, b"{\"ok\":true}");
        assert_eq!(r.arango_errors, Some(2));
        assert_eq!(r.content_type, None);
        let (r, _) = complete(b"HTTP/1.1 200 OK\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(
            r.content_type.as_deref(),
            Some("multipart/form-data; boundary=x")
        );
        assert_eq!(used, raw.len() - 5);
        assert!(!r.close);
    }

    #[test]
    fn partial_until_body_complete() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345";
        assert!(matches!(parse_response(raw, false), Ok(Parsed::Partial)));
        assert!(matches!(
            parse_response(b"HTTP/1.1 200 OK\r\nContent-Le", false),
            Ok(Parsed::Partial)
        ));
        assert!(parse_response(raw, true).is_err());
    }

    #[test]
    fn chunked_response() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n4\r\nWiki\r\n5;x=y\r\npedia\r\n0\r\n\r\n";
        let (r, used) = complete(raw);
        assert_eq!(r.body, b"Wikipedia");
        assert_eq!(used, raw.len());
        assert!(r.close);
        let cut = &raw[..raw.len() - 3];
        assert!(matches!(parse_response(cut, false), Ok(Parsed::Partial)));
    }

    #[test]
    fn body_until_close_and_no_body_statuses() {
        let raw = b"HTTP/1.1 200 OK\r\n\r\nabc";
        assert!(matches!(parse_response(raw, false), Ok(Parsed::Partial)));
        match parse_response(raw, true).unwrap() {
            Parsed::Complete(r, _) => assert_eq!(r.body, b"abc"),
            Parsed::Partial => panic!(),
        }
        let (r, _) = complete(b"HTTP/1.1 204 No Content\r\n\r\n");
        assert_eq!(r.status, 204);
        assert!(r.body.is_empty());
    }

    #[test]
    fn malformed_is_an_error() {
        assert!(parse_response(b"NOT HTTP AT ALL\r\n\r\n", false).is_err());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", false).is_err());
        assert!(parse_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            false
        )
        .is_err());
    }

    #[test]
    fn base64_and_segments() {
        assert_eq!(base64(b"root:"), "cm9vdDo=");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"abc"), "YWJj");
        assert_eq!(encode_segment("_system"), "_system");
        assert_eq!(encode_segment("a b/ü"), "a%20b%2F%C3%BC");
    }
}
