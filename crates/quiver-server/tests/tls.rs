//! `ssl://` endpoints: HTTP/1.1 and HTTP/2 (chosen by ALPN) over TLS with a certificate
//! generated here, driven by hyper's clients over rustls; failed handshakes (wrong version,
//! plain HTTP, silence) cost the server nothing but that connection.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use quiver_core::{Core, CoreOptions};
use quiver_server::{serve_tls_on, ServeHandle, ServerConfig, ServerState, TlsConfig, TlsProtocol};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

/// A self-signed certificate for `localhost` and 127.0.0.1: the server's PEM (chain and key,
/// as ArangoDB's keyfile) and the certificate the client trusts.
fn certificate() -> (String, CertificateDer<'static>) {
    let generated =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let pem = format!(
        "{}{}",
        generated.cert.pem(),
        generated.key_pair.serialize_pem()
    );
    (pem, generated.cert.der().clone())
}

fn client(
    trusted: &CertificateDer<'static>,
    alpn: &[&[u8]],
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> TlsConnector {
    let mut roots = RootCertStore::empty();
    roots.add(trusted.clone()).unwrap();
    let mut config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    TlsConnector::from(Arc::new(config))
}

async fn connect(
    connector: &TlsConnector,
    addr: std::net::SocketAddr,
) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from("localhost").unwrap();
    tokio::time::timeout(Duration::from_secs(10), connector.connect(name, tcp))
        .await
        .expect("handshake within 10 s")
}

fn version_request() -> hyper::Request<Empty<Bytes>> {
    hyper::Request::builder()
        .uri("https://localhost/_api/version")
        .body(Empty::new())
        .unwrap()
}

/// `GET /_api/version` over HTTP/1.1 on a fresh TLS connection: (HTTP version, body).
async fn get_version_http1(
    connector: &TlsConnector,
    addr: std::net::SocketAddr,
) -> (http::Version, serde_json::Value) {
    let tls = connect(connector, addr).await.expect("TLS handshake");
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let response = sender.send_request(version_request()).await.unwrap();
    assert_eq!(response.status(), 200);
    let version = response.version();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (version, serde_json::from_slice(&body).unwrap())
}

struct Server {
    _dir: tempfile::TempDir,
    rt: tokio::runtime::Runtime,
    handle: Option<ServeHandle>,
}

fn start(pem: &str, protocol: TlsProtocol) -> Server {
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
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tls = TlsConfig::from_pem(pem.as_bytes(), protocol).unwrap();
    let handle = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        serve_tls_on(
            state,
            listener,
            vec![tokio::runtime::Handle::current()],
            tls,
        )
        .unwrap()
    });
    Server {
        _dir: dir,
        rt,
        handle: Some(handle),
    }
}

#[test]
fn http1_and_http2_by_alpn_over_tls() {
    let (pem, trusted) = certificate();
    let mut server = start(&pem, TlsProtocol::Negotiated);
    let addr = server.handle.as_ref().unwrap().local_addr;
    server.rt.block_on(async {
        // HTTP/1.1, chosen by ALPN, with TLS 1.3 and TLS 1.2 clients.
        for versions in [
            &[&rustls::version::TLS13][..],
            &[&rustls::version::TLS12][..],
        ] {
            let connector = client(&trusted, &[b"http/1.1"], versions);
            let (version, body) = get_version_http1(&connector, addr).await;
            assert_eq!(version, http::Version::HTTP_11);
            assert_eq!(body["server"], "arango");
        }

        // HTTP/2, chosen by ALPN: several requests on one connection.
        let connector = client(&trusted, &[b"h2", b"http/1.1"], rustls::ALL_VERSIONS);
        let tls = connect(&connector, addr).await.expect("TLS handshake");
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        assert_eq!(
            tls.get_ref().1.protocol_version(),
            Some(rustls::ProtocolVersion::TLSv1_3)
        );
        let (mut sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
                .await
                .unwrap();
        tokio::spawn(conn);
        for _ in 0..3 {
            let response = sender.send_request(version_request()).await.unwrap();
            assert_eq!(response.status(), 200);
            assert_eq!(response.version(), http::Version::HTTP_2);
            assert!(response.headers().get("connection").is_none());
            let body = response.into_body().collect().await.unwrap().to_bytes();
            let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(body["server"], "arango");
        }

        // No ALPN at all: HTTP/1.1.
        let connector = client(&trusted, &[], rustls::ALL_VERSIONS);
        let tls = connect(&connector, addr).await.expect("TLS handshake");
        assert_eq!(tls.get_ref().1.alpn_protocol(), None);
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .unwrap();
        tokio::spawn(conn);
        let response = sender.send_request(version_request()).await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.version(), http::Version::HTTP_11);
    });
    // An open idle connection does not hold up shutdown beyond its grace.
    let handle = server.handle.take().unwrap();
    server.rt.block_on(async {
        let connector = client(&trusted, &[b"http/1.1"], rustls::ALL_VERSIONS);
        let _idle = connect(&connector, addr).await.expect("TLS handshake");
        let started = std::time::Instant::now();
        handle.shutdown(Duration::from_secs(1)).await;
        assert!(started.elapsed() < Duration::from_secs(8));
    });
}

#[test]
fn failed_handshakes_close_only_their_connection() {
    let (pem, trusted) = certificate();
    let server = start(&pem, TlsProtocol::Tls12);
    let addr = server.handle.as_ref().unwrap().local_addr;
    server.rt.block_on(async {
        // A TLS 1.3-only client meets a TLS 1.2-only server: no common version.
        let tls13 = client(&trusted, &[b"http/1.1"], &[&rustls::version::TLS13]);
        assert!(connect(&tls13, addr).await.is_err());

        // A client that does not trust the certificate refuses it.
        let (_, stranger) = certificate();
        let untrusting = client(&stranger, &[b"http/1.1"], rustls::ALL_VERSIONS);
        assert!(connect(&untrusting, addr).await.is_err());

        // Plain HTTP to the TLS port: the connection is closed without an HTTP answer.
        let mut plain = TcpStream::connect(addr).await.unwrap();
        plain
            .write_all(b"GET /_api/version HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await
            .unwrap();
        let mut received = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(10), plain.read_to_end(&mut received))
            .await
            .expect("closed within 10 s");
        assert!(read.is_err() || !received.starts_with(b"HTTP/"));

        // A client that connects and stays silent is not waited for by the others.
        let _silent = TcpStream::connect(addr).await.unwrap();

        // The server still serves a TLS 1.2 client.
        let tls12 = client(&trusted, &[b"http/1.1"], &[&rustls::version::TLS12]);
        let (version, body) = get_version_http1(&tls12, addr).await;
        assert_eq!(version, http::Version::HTTP_11);
        assert_eq!(body["server"], "arango");
    });
}

/// `/_admin/server/tls` through the dispatcher: the summary of the keyfile in use, a reload
/// after the file changed, a failed reload that keeps the settings, and `{}` without TLS.
#[test]
fn tls_summary_and_reload_through_the_api() {
    use quiver_server::{handle, Request};
    let dir = tempfile::tempdir().unwrap();
    let keyfile = dir.path().join("server.pem");
    let (first, _) = certificate();
    std::fs::write(&keyfile, &first).unwrap();
    let tls = TlsConfig::from_keyfile(&keyfile, TlsProtocol::Negotiated).unwrap();
    let state_with = |tls: Option<TlsConfig>, sub: &str| {
        let data = dir.path().join(sub);
        let core = Arc::new(Core::open(&data, CoreOptions::default()).unwrap());
        ServerState::new(
            ServerConfig {
                data_dir: data,
                auth: quiver_server::auth::AuthConfig::disabled(),
                async_workers: 1,
                tls,
                ..ServerConfig::default()
            },
            core,
        )
        .unwrap()
    };
    let state = state_with(Some(tls.clone()), "with");
    let call = |method: http::Method| {
        let r = handle(&state, Request::build(method, "/_admin/server/tls")).settle_blocking();
        let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        (r.status.as_u16(), body)
    };
    let sha256 = |text: &str| {
        use sha2::Digest;
        sha2::Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let (status, body) = call(http::Method::GET);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["keyfile"]["sha256"], sha256(&first));
    assert!(first.starts_with(
        body["result"]["keyfile"]["certificates"][0]
            .as_str()
            .unwrap()
    ));
    let (second, _) = certificate();
    std::fs::write(&keyfile, &second).unwrap();
    assert_eq!(
        call(http::Method::GET).1["result"]["keyfile"]["sha256"],
        sha256(&first)
    );
    let (status, body) = call(http::Method::POST);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["keyfile"]["sha256"], sha256(&second));
    assert_eq!(
        tls.keyfile_summary()["sha256"],
        sha256(&second),
        "shared with the endpoints"
    );
    std::fs::write(&keyfile, "garbage").unwrap();
    let (status, body) = call(http::Method::POST);
    assert_eq!(
        (status, body["errorNum"].clone()),
        (400, serde_json::json!(10)),
        "{body}"
    );
    assert_eq!(
        call(http::Method::GET).1["result"]["keyfile"]["sha256"],
        sha256(&second)
    );
    assert_eq!(call(http::Method::PUT).0, 403);
    let plain = state_with(None, "without");
    let r = handle(
        &plain,
        Request::build(http::Method::GET, "/_admin/server/tls"),
    )
    .settle_blocking();
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        (r.status.as_u16(), body["result"].clone()),
        (200, serde_json::json!({}))
    );
}
