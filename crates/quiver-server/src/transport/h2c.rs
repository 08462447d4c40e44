//! HTTP/2 through `Upgrade: h2c` (RFC 7540 §3.2): a connection whose first request asks to
//! switch is answered `101 Switching Protocols` and then served by the same HTTP/2 server as a
//! prior-knowledge connection.
//!
//! The upgrade request itself is stream 1 of the new connection and is answered there.
//! hyper's HTTP/2 server has no way to take over a stream the client never sent as a frame,
//! so the request is handed to it as one: after the client's connection preface and first
//! SETTINGS frame, the server reads a HEADERS frame (HPACK literals) and, for a body, one DATA
//! frame for stream 1, built here from the HTTP/1.1 request ([`Prefixed`]). The client's next
//! stream is 3, as RFC 7540 requires.
//!
//! Only what fits that frame pair is switched: a complete head in the first bytes the client
//! sent, a `Content-Length` body of at most one frame (16 KiB), no `Transfer-Encoding`.
//! Anything else is answered over HTTP/1.1 with the `Upgrade` header ignored, which the RFC
//! allows. The client's `HTTP2-Settings` header is not applied; the SETTINGS frame of its
//! preface is.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

/// The largest frame payload an HTTP/2 endpoint must accept (SETTINGS_MAX_FRAME_SIZE's
/// initial value).
const MAX_FRAME: usize = 16 * 1024;

/// At most this many request headers are looked at; more and the request stays HTTP/1.1.
const MAX_HEADERS: usize = 100;

/// Headers that belong to the HTTP/1.1 connection, not to the request (RFC 9113 §8.2.2).
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "upgrade",
    "http2-settings",
    "host",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
];

const FRAME_DATA: u8 = 0x0;
const FRAME_HEADERS: u8 = 0x1;
const FRAME_SETTINGS: u8 = 0x4;
const FLAG_END_STREAM: u8 = 0x1;
const FLAG_END_HEADERS: u8 = 0x4;

/// An upgrade request found in a connection's first bytes.
#[derive(Debug, PartialEq)]
pub(super) struct Upgrade {
    /// Bytes of the request head (request line and headers) to consume.
    head_len: usize,
    /// Bytes of body that follow the head.
    body_len: usize,
    /// The HPACK header block of stream 1.
    header_block: Vec<u8>,
}

/// Whether `first` (the bytes the client sent first, not consumed) holds a complete HTTP/1.1
/// request asking for `h2c` that can be handed over as stream 1.
pub(super) fn upgrade_request(first: &[u8]) -> Option<Upgrade> {
    // Cheap test first: nearly every connection is plain HTTP/1.1.
    if !contains_ignore_case(first, b"h2c") {
        return None;
    }
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let head_len = match request.parse(first) {
        Ok(httparse::Status::Complete(n)) => n,
        _ => return None,
    };
    if request.version != Some(1) {
        return None;
    }
    let header = |name: &'static str| {
        request
            .headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| std::str::from_utf8(h.value).unwrap_or(""))
    };
    let has_token = |name: &'static str, token: &str| {
        header(name).any(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    };
    if !has_token("upgrade", "h2c")
        || !has_token("connection", "upgrade")
        || !has_token("connection", "http2-settings")
        || header("http2-settings").count() != 1
        || header("transfer-encoding").next().is_some()
    {
        return None;
    }
    let body_len = match header("content-length").collect::<Vec<_>>().as_slice() {
        [] => 0,
        [one] => one.trim().parse::<usize>().ok()?,
        _ => return None,
    };
    if body_len > MAX_FRAME {
        return None;
    }
    let method = request.method?;
    let path = request.path?;
    let mut block = Vec::with_capacity(256);
    hpack_literal(&mut block, b":method", method.as_bytes());
    hpack_literal(&mut block, b":scheme", b"http");
    hpack_literal(&mut block, b":path", path.as_bytes());
    if let Some(host) = header("host").next() {
        hpack_literal(&mut block, b":authority", host.as_bytes());
    }
    for h in request.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        if !HOP_BY_HOP.contains(&name.as_str()) {
            hpack_literal(&mut block, name.as_bytes(), h.value);
        }
    }
    if block.len() > MAX_FRAME {
        return None;
    }
    Some(Upgrade {
        head_len,
        body_len,
        header_block: block,
    })
}

fn contains_ignore_case(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

/// An HPACK integer with an `prefix`-bit prefix whose other bits are `flags` (RFC 7541 §5.1).
fn hpack_integer(out: &mut Vec<u8>, flags: u8, prefix: u32, value: usize) {
    let max = (1usize << prefix) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// A "literal header field without indexing — new name" (RFC 7541 §6.2.2), strings not
/// Huffman-coded.
fn hpack_literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0x00);
    hpack_integer(out, 0, 7, name.len());
    out.extend_from_slice(name);
    hpack_integer(out, 0, 7, value.len());
    out.extend_from_slice(value);
}

fn frame(out: &mut BytesMut, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    debug_assert!(payload.len() <= MAX_FRAME);
    let len = payload.len() as u32;
    out.put_slice(&len.to_be_bytes()[1..]);
    out.put_u8(kind);
    out.put_u8(flags);
    out.put_u32(stream & 0x7fff_ffff);
    out.put_slice(payload);
}

/// The frames that carry the upgrade request as stream 1.
fn stream_one(upgrade: &Upgrade, body: &[u8]) -> BytesMut {
    let mut out = BytesMut::with_capacity(upgrade.header_block.len() + body.len() + 18);
    let end = if body.is_empty() { FLAG_END_STREAM } else { 0 };
    frame(
        &mut out,
        FRAME_HEADERS,
        FLAG_END_HEADERS | end,
        1,
        &upgrade.header_block,
    );
    if !body.is_empty() {
        frame(&mut out, FRAME_DATA, FLAG_END_STREAM, 1, body);
    }
    out
}

/// Switches the connection: consumes the upgrade request, answers 101, reads the client's
/// preface and first SETTINGS frame, and returns the socket with those frames and stream 1's
/// in front of whatever the client sends next. `None` when the client does not follow
/// through within `wait` (the connection is then dropped).
pub(super) async fn switch(
    mut stream: TcpStream,
    upgrade: Upgrade,
    wait: Duration,
) -> Option<Prefixed<TcpStream>> {
    let handshake = async {
        let mut head = vec![0u8; upgrade.head_len];
        stream.read_exact(&mut head).await.ok()?;
        let mut body = vec![0u8; upgrade.body_len];
        stream.read_exact(&mut body).await.ok()?;
        stream
            .write_all(
                b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
            )
            .await
            .ok()?;
        let mut preface = [0u8; super::HTTP2_PREFACE.len() + 9];
        stream.read_exact(&mut preface).await.ok()?;
        let (magic, settings_head) = preface.split_at(super::HTTP2_PREFACE.len());
        let len = u32::from_be_bytes([0, settings_head[0], settings_head[1], settings_head[2]]);
        if magic != super::HTTP2_PREFACE
            || settings_head[3] != FRAME_SETTINGS
            || len as usize > MAX_FRAME
        {
            return None;
        }
        let mut settings = vec![0u8; len as usize];
        stream.read_exact(&mut settings).await.ok()?;
        let mut prefix = BytesMut::with_capacity(preface.len() + settings.len() + 64);
        prefix.put_slice(&preface);
        prefix.put_slice(&settings);
        prefix.unsplit(stream_one(&upgrade, &body));
        Some(prefix.freeze())
    };
    let prefix = tokio::time::timeout(wait, handshake).await.ok()??;
    Some(Prefixed {
        prefix,
        inner: stream,
    })
}

/// A socket whose first reads return `prefix`.
pub(super) struct Prefixed<S> {
    prefix: Bytes,
    inner: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if !this.prefix.is_empty() {
            let n = this.prefix.len().min(buf.remaining());
            buf.put_slice(&this.prefix.split_to(n));
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UPGRADE: &str = "GET /_api/version?details=true HTTP/1.1\r\nHost: db:8529\r\n\
        Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\
        Accept: */*\r\n\r\n";

    #[test]
    fn hpack_integers_follow_rfc_7541() {
        // RFC 7541 C.1.1 and C.1.2 (5-bit prefix), and the 7-bit string lengths used here.
        let mut out = Vec::new();
        hpack_integer(&mut out, 0, 5, 10);
        assert_eq!(out, [0x0a]);
        out.clear();
        hpack_integer(&mut out, 0, 5, 1337);
        assert_eq!(out, [0x1f, 0x9a, 0x0a]);
        out.clear();
        hpack_integer(&mut out, 0, 7, 127);
        assert_eq!(out, [0x7f, 0x00]);
        out.clear();
        hpack_literal(&mut out, b"a", b"bc");
        assert_eq!(out, [0x00, 1, b'a', 2, b'b', b'c']);
    }

    #[test]
    fn an_upgrade_request_becomes_stream_one() {
        let bytes = format!("{UPGRADE}extra");
        let upgrade = upgrade_request(bytes.as_bytes()).expect("an upgrade");
        assert_eq!(upgrade.head_len, UPGRADE.len());
        assert_eq!(upgrade.body_len, 0);
        let mut expected = Vec::new();
        hpack_literal(&mut expected, b":method", b"GET");
        hpack_literal(&mut expected, b":scheme", b"http");
        hpack_literal(&mut expected, b":path", b"/_api/version?details=true");
        hpack_literal(&mut expected, b":authority", b"db:8529");
        hpack_literal(&mut expected, b"accept", b"*/*");
        assert_eq!(upgrade.header_block, expected);
        let frames = stream_one(&upgrade, b"");
        // One HEADERS frame on stream 1 that ends the headers and the stream.
        assert_eq!(
            &frames[..9],
            &[0, 0, expected.len() as u8, 1, 5, 0, 0, 0, 1]
        );
        let frames = stream_one(&upgrade, b"{}");
        assert_eq!(frames[4], FLAG_END_HEADERS);
        let data = &frames[9 + expected.len()..];
        assert_eq!(data, &[0, 0, 2, 0, 1, 0, 0, 0, 1, b'{', b'}']);
    }

    #[test]
    fn requests_that_cannot_switch_stay_http1() {
        // Plain requests, incomplete heads, missing pieces of the handshake, big or chunked
        // bodies.
        assert_eq!(upgrade_request(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"), None);
        assert_eq!(upgrade_request(&UPGRADE.as_bytes()[..40]), None);
        let no_settings = UPGRADE.replace("HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n", "");
        assert_eq!(upgrade_request(no_settings.as_bytes()), None);
        let no_connection = UPGRADE.replace("Connection: Upgrade, HTTP2-Settings\r\n", "");
        assert_eq!(upgrade_request(no_connection.as_bytes()), None);
        let big = UPGRADE.replace("Accept", "Content-Length: 100000\r\nAccept");
        assert_eq!(upgrade_request(big.as_bytes()), None);
        let chunked = UPGRADE.replace("Accept", "Transfer-Encoding: chunked\r\nAccept");
        assert_eq!(upgrade_request(chunked.as_bytes()), None);
        let small = UPGRADE
            .replace("GET", "POST")
            .replace("Accept", "Content-Length: 2\r\nAccept");
        assert_eq!(upgrade_request(small.as_bytes()).unwrap().body_len, 2);
    }
}
