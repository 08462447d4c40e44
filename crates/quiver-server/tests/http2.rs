//! HTTP/2 on the HTTP/1.1 port: with prior knowledge (driven by hyper's HTTP/2 client over a
//! real socket: the same answers, limits and shutdown as HTTP/1.1) and through `Upgrade: h2c`
//! (raw frames: the upgrade request is answered on stream 1).

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use quiver_core::{Core, CoreOptions};
use quiver_server::{serve_on, ServerConfig, ServerState};
use serde_json::Value;

const MAX_BODY: usize = 64 * 1024;

struct Answer {
    status: u16,
    version: http::Version,
    headers: http::HeaderMap,
    body: Value,
}

async fn send(
    sender: &mut http2::SendRequest<Full<Bytes>>,
    method: &str,
    path: &str,
    body: impl Into<Bytes>,
    encoding: Option<&str>,
) -> Answer {
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(format!("http://localhost{path}"));
    if let Some(encoding) = encoding {
        request = request.header("content-encoding", encoding);
    }
    let request = request.body(Full::new(body.into())).unwrap();
    let response = tokio::time::timeout(Duration::from_secs(10), sender.send_request(request))
        .await
        .expect("answered within 10 s")
        .expect("HTTP/2 exchange");
    let status = response.status().as_u16();
    let version = response.version();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or_else(|_| panic!("not JSON: {bytes:?}"))
    };
    Answer {
        status,
        version,
        headers,
        body,
    }
}

#[test]
fn http2_prior_knowledge_is_served_like_http1() {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let state = ServerState::new(
        ServerConfig {
            data_dir: dir.path().to_path_buf(),
            auth: quiver_server::auth::AuthConfig::disabled(),
            async_workers: 1,
            max_body_size: MAX_BODY,
            ..ServerConfig::default()
        },
        core,
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = serve_on(state, listener, vec![tokio::runtime::Handle::current()]).unwrap();
        let tcp = tokio::net::TcpStream::connect(server.local_addr)
            .await
            .unwrap();
        let (mut sender, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .expect("HTTP/2 handshake");
        let client = tokio::spawn(conn);

        let a = send(
            &mut sender,
            "POST",
            "/_api/collection",
            r#"{"name":"c"}"#,
            None,
        )
        .await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(a.version, http::Version::HTTP_2);
        assert_eq!(a.headers["server"], "ArangoDB");
        assert!(a.headers.get("connection").is_none(), "{:?}", a.headers);

        let a = send(
            &mut sender,
            "POST",
            "/_api/document/c",
            r#"{"_key":"a","n":1}"#,
            None,
        )
        .await;
        assert_eq!(a.status, 202, "{}", a.body);
        assert_eq!(a.body["_id"], "c/a");
        let a = send(&mut sender, "GET", "/_api/document/c/a", "", None).await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(a.body["n"], 1);
        assert!(a.headers.contains_key("etag"));

        // A gzip body is inflated as over HTTP/1.1.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(br#"{"_key":"b","n":2}"#).unwrap();
        let a = send(
            &mut sender,
            "POST",
            "/_api/document/c",
            gz.finish().unwrap(),
            Some("gzip"),
        )
        .await;
        assert_eq!(a.status, 202, "{}", a.body);

        let a = send(
            &mut sender,
            "POST",
            "/_api/cursor",
            r#"{"query":"FOR d IN c SORT d.n RETURN d.n","batchSize":1}"#,
            None,
        )
        .await;
        assert_eq!(a.status, 201, "{}", a.body);
        assert_eq!(a.body["result"], serde_json::json!([1]));
        assert_eq!(a.body["hasMore"], true);
        let id = a.body["id"].as_str().unwrap().to_string();
        let a = send(&mut sender, "POST", &format!("/_api/cursor/{id}"), "", None).await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(a.body["result"], serde_json::json!([2]));

        // Errors carry ArangoDB's envelope.
        let a = send(&mut sender, "GET", "/_api/document/c/nope", "", None).await;
        assert_eq!(a.status, 404);
        assert_eq!(a.body["errorNum"], 1202);
        assert_eq!(a.body["error"], true);
        let a = send(&mut sender, "POST", "/_api/document/c", "{", None).await;
        assert_eq!(a.status, 400);
        assert_eq!(a.body["errorNum"], 600);

        // A body over the limit is refused with 413, and the connection stays usable.
        let big = format!(r#"{{"pad":"{}"}}"#, "x".repeat(MAX_BODY));
        let a = send(&mut sender, "POST", "/_api/document/c", big, None).await;
        assert_eq!(a.status, 413, "{}", a.body);
        assert_eq!(a.body["errorNum"], 413);
        let a = send(&mut sender, "GET", "/_api/collection/c/count", "", None).await;
        assert_eq!(a.body["count"], 2, "{}", a.body);

        // Shutdown sends GOAWAY: the client connection ends well within the grace period.
        server.shutdown(Duration::from_secs(5)).await;
        tokio::time::timeout(Duration::from_secs(3), client)
            .await
            .expect("client connection closed by the server")
            .unwrap()
            .ok();
    });
}

#[test]
fn http1_requests_starting_like_the_preface_stay_http1() {
    // `PUT` and `PATCH` share the preface's first byte; they must still be served as HTTP/1.1.
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let state = ServerState::new(
        ServerConfig {
            data_dir: dir.path().to_path_buf(),
            auth: quiver_server::auth::AuthConfig::disabled(),
            async_workers: 1,
            ..ServerConfig::default()
        },
        core,
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt
        .block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            serve_on(state, listener, vec![tokio::runtime::Handle::current()])
        })
        .unwrap();
    let mut conn = std::net::TcpStream::connect(server.local_addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.write_all(b"PUT /_admin/server/mode HTTP/1.1\r\nHost: x\r\nContent-Length: 18\r\n\r\n{\"mode\":\"default\"}")
        .unwrap();
    let mut line = String::new();
    BufReader::new(conn).read_line(&mut line).unwrap();
    assert_eq!(line.trim_end(), "HTTP/1.1 200 OK");
    rt.block_on(server.shutdown(Duration::from_secs(1)));
}

/// Reads one HTTP/2 frame: (type, flags, stream, payload).
fn read_frame(conn: &mut std::net::TcpStream) -> (u8, u8, u32, Vec<u8>) {
    use std::io::Read;
    let mut head = [0u8; 9];
    conn.read_exact(&mut head).unwrap();
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    let mut payload = vec![0u8; len];
    conn.read_exact(&mut payload).unwrap();
    (head[3], head[4], stream, payload)
}

#[test]
fn h2c_upgrade_answers_the_request_on_stream_one_over_http2() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let state = ServerState::new(
        ServerConfig {
            data_dir: dir.path().to_path_buf(),
            auth: quiver_server::auth::AuthConfig::disabled(),
            async_workers: 1,
            ..ServerConfig::default()
        },
        core,
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt
        .block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            serve_on(state, listener, vec![tokio::runtime::Handle::current()])
        })
        .unwrap();
    let mut conn = std::net::TcpStream::connect(server.local_addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.write_all(
        b"GET /_api/version HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n\
          Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n",
    )
    .unwrap();
    // The 101 head, byte by byte up to its blank line.
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        conn.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
        assert!(head.len() < 1024, "{}", String::from_utf8_lossy(&head));
    }
    let head = String::from_utf8(head).unwrap();
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert!(head.to_ascii_lowercase().contains("upgrade: h2c"), "{head}");
    // Client preface and an empty SETTINGS frame; the server's first frame is its SETTINGS.
    conn.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .unwrap();
    let (kind, _, stream, _) = read_frame(&mut conn);
    assert_eq!((kind, stream), (0x4, 0), "server SETTINGS first");
    // Stream 1 carries the answer to the upgrade request: HEADERS, then the body in DATA
    // frames up to END_STREAM.
    let mut body = Vec::new();
    let mut headers_seen = false;
    for _ in 0..64 {
        let (kind, flags, stream, payload) = read_frame(&mut conn);
        match (kind, stream) {
            (0x1, 1) => headers_seen = true,
            (0x0, 1) => {
                body.extend_from_slice(&payload);
                if flags & 0x1 != 0 {
                    break;
                }
            }
            _ => {} // SETTINGS ACK, WINDOW_UPDATE, ...
        }
    }
    assert!(headers_seen);
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["server"], "arango");
    drop(conn);
    rt.block_on(server.shutdown(Duration::from_secs(1)));
}

#[test]
fn a_connection_that_sent_nothing_is_closed_at_shutdown_at_once() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let state = ServerState::new(
        ServerConfig {
            data_dir: dir.path().to_path_buf(),
            auth: quiver_server::auth::AuthConfig::disabled(),
            async_workers: 1,
            ..ServerConfig::default()
        },
        core,
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt
        .block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            serve_on(state, listener, vec![tokio::runtime::Handle::current()])
        })
        .unwrap();
    // A pooled connection opened ahead of its first request.
    let mut idle = std::net::TcpStream::connect(server.local_addr).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let started = std::time::Instant::now();
    rt.block_on(server.shutdown(Duration::from_secs(5)));
    let mut buf = [0u8; 16];
    assert_eq!(idle.read(&mut buf).unwrap(), 0, "closed without an answer");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}
